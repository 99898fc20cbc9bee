"""The lab's process-starting code from a process that multiprocessing started with `spawn`, macOS's default (and
Windows' only) start method: a fresh interpreter that imports what it runs, with nothing inherited from its parent.

uvicorn starts its workers with spawn on every platform, so the API on `--workers 2` is held by test_workers.py.
"""

import asyncio
import os

import httpx
import psutil
from fastapi import FastAPI

from scripts.toolkit.processes import serve_in_thread
from scripts.toolkit.running.commands import in_own_process
from scripts.toolkit.services import is_healthy, simulator

APP = FastAPI()


@APP.get("/health")
def health() -> dict:
    return {"pid": os.getpid()}


def start_and_stop_from_a_spawned_process() -> dict:
    """In the spawned process: the simulator as a Service (its own group, ready on /health, stopped by pid), then
    an app under uvicorn in a thread."""
    provider = simulator().start()
    try:
        healthy = is_healthy(provider.url)
    finally:
        exit_code = provider.stop()
    with serve_in_thread(APP) as url:
        served_by = httpx.get(f"{url}/health").json()["pid"]
    return {
        "spawned": "spawn_main" in " ".join(psutil.Process().cmdline()),  # multiprocessing.spawn's entry point
        "simulator healthy": healthy,
        "simulator exit code": exit_code,
        "simulator left running": provider.process is not None and provider.process.poll() is None,
        "app served by this process": served_by == os.getpid(),
    }


def test_a_spawned_process_starts_and_stops_a_service_and_serves_an_app():
    seen = asyncio.run(in_own_process(start_and_stop_from_a_spawned_process))
    assert seen == {
        "spawned": True,
        "simulator healthy": True,
        "simulator exit code": 0,  # stopped gracefully, as from a terminal
        "simulator left running": False,
        "app served by this process": True,
    }
