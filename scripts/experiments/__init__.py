"""The experiment app of the wider reading and how the commands start it.

- app: the routes, variants side by side (`uvicorn scripts.experiments.app:app`), the rows they serialize, and
  their clients and process pool
- cpu: the CPU work, imported by name in the process pool's workers
- settings: PROVIDER_URL and THREAD_LIMIT
- runner: the app as a Service on a free port, and what probe, sweep and thread_cliff start (`served`)
- knee, cliff: what scripts.sweep and scripts.thread_cliff measure, find and print (their tests import these)
- __main__: `python -m scripts.experiments`, the app in the foreground

This file imports nothing: every worker of the process pool imports the package on its way to `cpu`.
"""
