"""The lab's tools' shared code: the commands in scripts/ parse their arguments and call into it.

One home per idea, each module named after its noun:

- cli: one-line errors, exit codes, SIGTERM as Ctrl+C (`run`), progress lines and their Clock,
  argparse types, plain-text tables
- processes: the one process runner: free ports, `Service` (ready on /health, stopped by pid),
  `stop_process`, `signals_ignored`
- lab: the simulator and API services, and the whole lab per INTAKE_MODE (`running_lab`)
- load: the one closed load loop over request factories, `Load`, the saturation threshold
- health: the one /health prober (`probe_health`), `check_api`, `is_healthy`
- quantiles: the one quantile function (0 to 1) and `summarize`
- answers: the API's error codes, Server-Timing and X-Provider-Calls, `describe_failure`
- stalls: tickets sent in groups while /health is probed (scripts.stall, scripts.compare)
- metrics: the one reader of GET /metrics (prometheus-client's parser): `read_metrics`, `metric_totals`
- charts: the drawing of stall's timeline and of compare's and capacity's figures, `load_pyplot`
- dataset: the seeded data sets and random tickets
- databases: schema and data set loading, status, throwaway databases
- settings_table: the READMEs' settings table, written from `Settings` (and read by tests/test_config.py)
- locust, course (+ course.toml), lessons: the maintainers' own (Locust runs, the course's published
  figures, snapshots/README.md); not given to students
- watcher (+ watch_page.html), held: what the server holds, sampled several times a second for
  scripts.watch's page and recorded by compare and capacity; a recording's peaks and chart. Not given to students
"""
