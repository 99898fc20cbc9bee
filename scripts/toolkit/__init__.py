"""The tools' shared code: the commands in scripts/ parse their arguments and call into it.

One home per idea, each module named after its noun. A student's project holds these (the
lessons' scripts and the student suite use them):

- cli: one-line errors, exit codes, SIGTERM as Ctrl+C (`run`), progress lines and their Clock,
  argparse types, plain-text tables
- processes: the one process runner: free ports, `Service` (ready on /health, stopped by pid),
  `stop_process`, `signals_ignored`, the open-files limit
- lab: the simulator and the API as Services, with uvicorn's bounds on what clients hold
- health: the one /health prober (`probe_health`), `check_api`, `is_healthy`
- answers: the API's error codes, Server-Timing and X-Provider-Calls, `describe_failure`
- metrics: the one reader of GET /metrics (prometheus-client's parser): `read_metrics`, `metric_totals`
- dataset: the seeded data sets and random tickets
- databases: schema and data set loading, status, throwaway databases
- settings_table: the READMEs' settings table, written from `Settings` (and read by tests/test_config.py)

The lab's own tools add modules that no student's project holds, each saying what it is for:
stack (the whole lab per INTAKE_MODE), load (the one closed load loop), quantiles, charts,
watcher and held (what the server holds, sampled), locust and request_times (its plugin that
records each request's time, loaded by Locust only), course, lessons (lessons.toml, the shape of a
command's figures, a lesson command run), suites (a project's own test suite, run), imports.
scripts.check's own: checks (how checks run and depend on each other), lesson_checks (the checks
of a lesson), check_context, check_stack (the student's API, the simulator, what PostgreSQL and the
simulator see), held_loop (where the event loop was held, from a sampler in the API's process),
student_project (its files, settings and PostgreSQL), check_report (and its hints, check_hints.toml).
"""
