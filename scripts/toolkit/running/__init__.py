"""Starting and stopping what the lab runs, on free ports of 127.0.0.1, stopped by pid.

- apis: the ticket API and the lab's other apps under uvicorn as Services (`api`), every uvicorn command line
  (`uvicorn_command`), a Service for the length of a block (`started`)
- commands: a command run to its end (`run_to_completion`, `run_in_foreground`, `running`), a function in an
  interpreter of its own (`in_own_process`)
- stack: the whole lab per INTAKE_MODE, from nothing (`Stack`, `running_stack`), MODES
- postgres: the embedded server's postmaster (the one reader of postmaster.pid), killed and restarted; its client
  programs (pgbench)
- busy: a busy machine on purpose, CPU-bound processes and pgbench's long queries beside a command (scripts.busy)
- sleeping_provider: a provider that only sleeps, the yardstick of scripts.simulator_bench
"""
