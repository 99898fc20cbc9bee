"""The tools' shared code: the commands in scripts/ parse their arguments and call into it.

Its folders are its map, one concern each, and each folder's __init__.py names its modules (tests/lab/test_one_home.py
holds the code to both). A student's project holds the modules at this top, and of running/ the process runner and
the lab's services: the lessons' scripts and the student suite use them.

- cli: one-line errors, exit codes, SIGTERM as Ctrl+C (`run`), a command's parser, progress lines and their Clock,
  argparse types, plain-text tables
- health: the one /health prober (`probe_health`), `check_api`, `is_healthy`
- answers: the API's error codes, Server-Timing and X-Provider-Calls, `describe_failure`
- metrics: the one reader of GET /metrics (prometheus-client's parser): `read_metrics`, `metric_totals`
- dataset: the seeded data sets and random tickets
- databases: the database: schema and data set loading, throwaway databases, and the one home of what the tools read
  of PostgreSQL's state
- settings_table: the READMEs' settings table, written from the API's Settings (and read by tests/test_config.py)

- running/: starting and stopping what the lab runs: the process runner, the simulator and the API as services, the
  whole lab per mode, the embedded PostgreSQL's processes, a busy machine, the sleeping provider
- load/: making load: the closed loop, a level of it against the physical limit, its schedule in turn, Locust, wrk
- measure/: reading what a run did, from outside: CPU per process, py-spy's samples, /metrics between two scrapes,
  what the server held several times a second, quantiles and medians
- check/: scripts.check, a student's project held to the lesson
- lessons/: lessons.toml, the snapshots' files and README, a project's own suite run
- reports/: drawing and printing: the charts, the bench's, compare's and capacity's tables, the course's figures
- soak/: scripts.soak's load with faults and its audit of PostgreSQL
"""
