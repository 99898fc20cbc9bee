"""The ticket API, and the lab's other apps, under uvicorn as Services on free ports of 127.0.0.1.

uvicorn bounds what clients can hold of the API with its own options: LIMIT_CONCURRENCY connections (one more gets
its plain-text 503) and KEEP_ALIVE_S of idle keep-alive; the runner raises its own open-files limit for them, and
the processes it starts inherit it.

An API run from the lab's folder gets uvicorn's own logging configuration (`--log-config`) with one handler more, on
the watchdog's logger: each blocked-loop record's fields (the watchdog's `extra`) as a line of JSON beside its text
line, which `watchdog_records()` reads back as values.
"""

import copy
import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from uvicorn.config import LOGGING_CONFIG

from scripts.toolkit.check.loop_sampler import marked_lines
from scripts.toolkit.cli import PROJECT_ROOT, progress
from scripts.toolkit.processes import free_port
from scripts.toolkit.services import KEEP_ALIVE_S, LIMIT_CONCURRENCY, Service

if sys.platform != "win32":
    import resource

FILES_PER_CONNECTION = 2  # a client's socket, and the provider call it may wait on
FILES_RESERVE = 256  # the database pool, logs, the libraries' own files
STOP_TIMEOUT_S = 10  # SIGKILL after this; every request has finished by then in these runs
API_APP = "ticket_api.main:app"
WATCHDOG_RECORD = "watchdog-record: "  # begins the JSON line of one blocked-loop record in an API's output
LOG_CONFIG = PROJECT_ROOT / ".lab" / "api-logging.json"


def api(
    provider_url: str,
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
    port = free_port()
    bounds = ["--limit-concurrency", str(limit_concurrency), "--timeout-keep-alive", f"{keep_alive_s:g}"]
    bounds += ["--factory"] if factory else []
    # Only from the lab's folder is the handler's module found in the API's process (not in a student's project).
    bounds += ["--log-config", str(log_config())] if cwd == PROJECT_ROOT else []
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


class WatchdogRecords(logging.StreamHandler):
    """In the API's process, on the watchdog's logger: each blocked-loop record's fields as a line of JSON on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        """Write the records that carry the watchdog's fields; leave the others (its start-up line) to the root's."""
        if hasattr(record, "blocked_ms"):
            super().emit(record)

    def format(self, record: logging.LogRecord) -> str:
        """The record's fields: how long the loop had been blocked (ms) and the line it named."""
        fields = vars(record)  # the watchdog's `extra` are the record's attributes
        return WATCHDOG_RECORD + json.dumps({"ms": fields["blocked_ms"], "at": fields["blocked_at"]})


def watchdog_records(output: str) -> list[dict]:
    """The watchdog's blocked-loop records in an API's output, in order: {"ms": 412, "at": "file:line in f(): code"}."""
    return marked_lines(output, WATCHDOG_RECORD)


def log_config() -> Path:
    """uvicorn's own logging configuration with WatchdogRecords on the watchdog's logger, as a file for --log-config."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["handlers"]["watchdog"] = {"()": f"{__name__}.{WatchdogRecords.__name__}"}
    config["loggers"]["ticket_api.watchdog"] = {"handlers": ["watchdog"]}  # its records still reach the root's handler
    text = json.dumps(config, indent=2)
    if not LOG_CONFIG.is_file() or LOG_CONFIG.read_text() != text:
        LOG_CONFIG.parent.mkdir(parents=True, exist_ok=True)
        written = LOG_CONFIG.with_name(f"{LOG_CONFIG.name}.{os.getpid()}")
        written.write_text(text)
        written.replace(LOG_CONFIG)  # whole, for a process that reads it meanwhile
    return LOG_CONFIG


def raise_open_files_limit(needed: int) -> str | None:
    """Raise this process's soft limit of open files to `needed` (up to the hard limit), for it and the processes
    it starts from now on; what falls short, in words, or None."""
    if sys.platform != "win32":  # Windows has no open-files limit to raise
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY or soft >= needed:
            return None
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            target = soft
        return (
            None if target >= needed else f"the open-files limit is {target:,}, under the {needed:,} needed (ulimit -n)"
        )
    return None


def output_since(service: Service, start: int) -> str:
    """What the service's process has written from byte `start` of its output (its size at some moment) on."""
    with open(service.log_path, "rb") as file:
        file.seek(start)
        return file.read().decode(errors="replace")


@contextmanager
def started(service: Service) -> Iterator[Service]:
    """Start the service; stop it when the block ends, however it ends."""
    try:
        yield service.start()
    finally:
        service.stop(STOP_TIMEOUT_S)
