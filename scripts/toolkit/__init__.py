"""The tools' shared code: the commands in scripts/ parse their arguments and call into it.

One home per idea, each module named after its noun (tests/lab/test_one_home.py holds the map to
the code). A student's project holds these (the lessons' scripts and the student suite use them):

- cli: one-line errors, exit codes, SIGTERM as Ctrl+C (`run`), progress lines and their Clock,
  argparse types, plain-text tables
- processes: the one process runner: free ports, child processes in a group of their own stopped by
  pid (`start_process`, `running`, `stop_process`), `Service` (ready on /health), `serve_in_thread`
- lab: the simulator and the API as Services, and every uvicorn command line (`uvicorn_command`)
- health: the one /health prober (`probe_health`), `check_api`, `is_healthy`
- answers: the API's error codes, Server-Timing and X-Provider-Calls, `describe_failure`
- metrics: the one reader of GET /metrics (prometheus-client's parser): `read_metrics`, `metric_totals`
- dataset: the seeded data sets and random tickets
- databases: schema and data set loading, status, throwaway databases
- settings_table: the READMEs' settings table, written from `Settings` (and read by tests/test_config.py)

The lab's own tools add modules that no student's project holds:

- load: the one closed load loop, on aiohttp's client
- stack: the whole lab per INTAKE_MODE (`Stack`, `running_stack`), MODES
- levels: one level of load on a ticket API against the physical limit (scripts.bench, scripts.client_cpu)
- cpu: the CPU of each process by role over a window
- postgres: the embedded server's postmaster (the one reader of postmaster.pid), killed and restarted; its client
  programs (pgbench)
- busy: a busy machine on purpose, CPU-bound processes and pgbench's long queries beside a command (scripts.busy)
- profile: py-spy's samples of the API
- bench_report: the bench's table and verdicts
- wrk: wrk, the outside check
- locust and request_times: Locust runs, and its plugin that records each request (loaded by Locust only)
- watcher, readings and held: what the server holds, sampled; /metrics between two readings; the peaks, charted
- capacity_table and compare_table: capacity's and compare's rows, tables and files
- charts: the timeline, compare's and capacity's charts
- course: the course's figures (course.toml)
- audit, faults: the soak's check of PostgreSQL and its load with faults
- reference: the sleeping provider, yardstick of scripts.simulator_bench
- project: which files are a student's (scripts.snapshots)
- lessons and snapshots_readme: lessons.toml (its lessons, their figures' shape, a lesson command run), and
  snapshots/README.md written from it (each lesson's copy lines; its end, scripts.check's, in snapshots_check.md)
- suites: a project's own test suite, run as a student runs it: its count and its failures
- checks, lesson_checks and check_report: scripts.check's checks run in order with their dependencies, a lesson's
  checks from lessons.toml, the report in plain words or JSON (the hints in check_hints.toml)
- student_project, check_context and check_stack: a student's project (its lesson files, settings, PostgreSQL), what
  one check run shares, the student's API and the lab's simulator with what PostgreSQL and the simulator see
- held_loop: where a project's API held its event loop, from a sampler in the API's own process
- quantiles: the one quantile function
"""
