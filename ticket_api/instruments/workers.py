"""Several worker processes of one server (`fastapi run --workers N`, `uvicorn --workers N`): what they share.

uvicorn starts each worker as a child process of its supervisor, and each imports the app afresh (as it
does the one server process of `fastapi dev`, a child of its reloader). prometheus_client counts in one
folder for all the processes of a server, its multiprocess mode, which it chooses when it is imported: so
`share_metrics()` runs before that, and names the folder of this worker's supervisor.
"""

import functools
import multiprocessing
import os
import shutil
from pathlib import Path

import psutil

from ticket_api import PROJECT_ROOT

METRICS_FOLDERS = PROJECT_ROOT / ".lab" / "metrics"  # one folder per server: server_name(its supervisor's pid)
SHARED = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's documented variable


def share_metrics() -> None:
    """In a worker process, count this process's metrics in the folder its server's workers share (unless
    PROMETHEUS_MULTIPROC_DIR names one already); in a process of its own, nothing changes."""
    if multiprocessing.parent_process() is None or SHARED in os.environ:
        return
    folder = METRICS_FOLDERS / server_name(os.getppid())  # its supervisor's
    folder.mkdir(parents=True, exist_ok=True)
    os.environ[SHARED] = str(folder)


@functools.cache
def several_workers() -> bool:
    """Whether this process is one of several workers of one server; under a reloader (`fastapi dev`) it is the
    only one."""
    supervisor = multiprocessing.parent_process()
    if supervisor is None:
        return False
    # The supervisor starts every worker one after another, before any of them has imported the app, each with
    # the same command line as this one's but for the pipe it reads its orders from; its other child, the
    # resource tracker of multiprocessing, has another.
    try:
        me = psutil.Process().cmdline()
        siblings = [child.cmdline() for child in psutil.Process(supervisor.pid).children()]
    except psutil.Error:
        return False
    # Alike: the same program, started the same way (the same first and last words).
    return sum(command[:1] == me[:1] and command[-1:] == me[-1:] for command in siblings) > 1


def application_name() -> str:
    """How this process's connections to PostgreSQL are named (pg_stat_activity, `python -m scripts.db status`)."""
    return f"ticket_api {os.getpid()}"


def server_name(pid: int) -> str:
    """A server's name, from its supervisor's pid and start time: a pid is used again (in a container, 1 each run)."""
    try:
        return f"{pid}-{psutil.Process(pid).create_time():.0f}"
    except psutil.Error:
        return f"{pid}-stopped"


def forget_stopped_servers(folders: Path = METRICS_FOLDERS) -> None:
    """Remove the metrics folders of servers whose supervisor no longer runs (they count nothing any more)."""
    if not folders.is_dir():
        return
    for folder in folders.iterdir():
        pid = folder.name.partition("-")[0]
        if pid.isdigit() and folder.name != server_name(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
