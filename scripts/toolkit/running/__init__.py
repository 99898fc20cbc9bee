"""Starting and stopping what the lab runs, on free ports of 127.0.0.1, stopped by pid.

- processes: the one process runner: free ports, child processes in a group of their own stopped by pid
  (`start_process`, `running`, `stop_process`), a command run to its end (`run_to_completion`, `run_in_foreground`), an
  ASGI app served in a thread, a function in an interpreter of its own (a student's project holds it)
- services: a Service (a process ready on /health), the simulator and the API as Services, and every uvicorn
  command line (`uvicorn_command`) (a student's project holds it)
- stack: the whole lab per INTAKE_MODE, from nothing (`Stack`, `running_stack`), MODES
- postgres: the embedded server's postmaster (the one reader of postmaster.pid), killed and restarted; its client
  programs (pgbench)
- busy: a busy machine on purpose, CPU-bound processes and pgbench's long queries beside a command (scripts.busy)
- sleeping_provider: a provider that only sleeps, the yardstick of scripts.simulator_bench
"""
