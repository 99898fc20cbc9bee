"""What the project's scripts and tests share: the lessons' commands in scripts/, the tests and Locust's file use
these modules.

- cli: one-line errors, exit codes, SIGTERM as Ctrl+C (`run`), a command's parser (`command_parser`), progress lines
- answers: the API's error code of an answer (`error_code`)
- dataset: the seeded data sets and random tickets
- databases: the schema and a data set loaded, the database's status, throwaway databases for the tests
- metrics: the one reader of GET /metrics (prometheus-client's parser): `read_metrics`
- processes: the one process runner: free ports, child processes stopped by pid, an ASGI app served in a thread
- services: a Service (a process ready on /health) and the simulator as one (`simulator`)
- settings_table: how a setting's default is written in the README's table (`shown_default`)
"""
