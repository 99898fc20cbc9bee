"""The ticket API, and the lab's other apps, under uvicorn as Services on free ports of 127.0.0.1.

uvicorn bounds what clients can hold of the API with its own options: LIMIT_CONCURRENCY connections (one more gets
its plain-text 503) and KEEP_ALIVE_S of idle keep-alive; the runner raises its own open-files limit for them, and
the processes it starts inherit it.
"""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scripts.toolkit.cli import PROJECT_ROOT, progress
from scripts.toolkit.processes import free_port
from scripts.toolkit.services import KEEP_ALIVE_S, LIMIT_CONCURRENCY, Service

if sys.platform != "win32":
    import resource

FILES_PER_CONNECTION = 2  # a client's socket, and the provider call it may wait on
FILES_RESERVE = 256  # the database pool, logs, the libraries' own files
STOP_TIMEOUT_S = 10  # SIGKILL after this; every request has finished by then in these runs
API_APP = "ticket_api.main:app"


def api(
    provider_url: str,
    port: int | None = None,
    env: dict[str, str] | None = None,
    workers: int = 1,
    log_dir: Path | None = None,
    cwd: Path = PROJECT_ROOT,
    loop: str = "asyncio",
    limit_concurrency: int = LIMIT_CONCURRENCY,
    keep_alive_s: float = KEEP_ALIVE_S,
    app: str = API_APP,
    script: Path | None = None,
    factory: bool = False,
) -> Service:
    """The ticket API (or `app`, reading the same settings) under uvicorn on a free port; `env` sets its settings
    (INTAKE_MODE=..., ...).

    `loop` is asyncio's own event loop, as the course measured, or "uvloop"; named, never left to
    uvicorn's "auto", which takes uvloop whenever it is installed. `script`: see uvicorn_command.
    `factory`: `app` names a function that makes the app (uvicorn's --factory).
    """
    port = port or free_port()
    bounds = ["--limit-concurrency", str(limit_concurrency), "--timeout-keep-alive", f"{keep_alive_s:g}"]
    bounds += ["--factory"] if factory else []
    argv = uvicorn_command(app, port, workers, loop, *bounds, script=script)
    short = raise_open_files_limit(FILES_PER_CONNECTION * limit_concurrency + FILES_RESERVE)
    if short:
        progress(f"warning: {short}: the API may refuse connections before --limit-concurrency {limit_concurrency}")
    settings = {"PROVIDER_URL": provider_url, "LOG_LEVEL": "WARNING", **(env or {})}
    return Service("api", argv, port, env=settings, log_dir=log_dir, cwd=cwd)


def uvicorn_command(
    app: str, port: int, workers: int = 1, loop: str = "asyncio", *options: str, script: Path | None = None
) -> list[str]:
    """`python -m uvicorn APP` on 127.0.0.1:`port`, the loop named, without access log, 30 s to finish at a stop.

    asyncio's own loop unless told: uvicorn's default ("auto") takes uvloop whenever it is installed.
    `script`, in place of `-m uvicorn`: a file that runs uvicorn's own command line with one more thing in its
    process (scripts.check's toolkit/check/loop_sampler.py).
    """
    runner = [str(script)] if script else ["-m", "uvicorn"]
    argv = [sys.executable, *runner, app, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
    return [*argv, "--loop", loop, "--timeout-graceful-shutdown", "30", "--no-access-log", *options]


def raise_open_files_limit(needed: int) -> str | None:
    """Raise this process's soft limit of open files to `needed` (up to the hard limit), for it and the processes
    it starts from now on; what falls short, in words, or None."""
    if sys.platform == "win32":
        return None  # Windows has no open-files limit to raise
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        target = soft
    return None if target >= needed else f"the open-files limit is {target:,}, under the {needed:,} needed (ulimit -n)"


@contextmanager
def started(service: Service) -> Iterator[Service]:
    """Start the service; stop it when the block ends, however it ends."""
    try:
        yield service.start()
    finally:
        service.stop(STOP_TIMEOUT_S)
