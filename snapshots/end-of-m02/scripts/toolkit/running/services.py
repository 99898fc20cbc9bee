"""A Service, a process ready on /health and stopped by pid; the simulator and the ticket API as Services, on free
ports of 127.0.0.1.

Tests and the lab's commands start them through these functions, and build every uvicorn command
line with `uvicorn_command` (the experiment app's too). uvicorn bounds what clients can
hold of the API with its own options: LIMIT_CONCURRENCY connections (one more gets its plain-text
503) and KEEP_ALIVE_S of idle keep-alive; the runner raises its own open-files limit for them, and
the processes it starts inherit it.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scripts.toolkit.cli import PROJECT_ROOT, CommandError, progress
from scripts.toolkit.health import is_healthy
from scripts.toolkit.running.processes import check_port_free, free_port, start_process, stop_process

try:
    import resource
except ImportError:  # Windows: no open-files limit to raise
    resource = None  # type: ignore[assignment]  # None stands for the missing module

LIMIT_CONCURRENCY = 2048  # connections (and requests in flight) per API process: the bench's 1,024 users fit
KEEP_ALIVE_S = 5  # an idle keep-alive connection is closed after this long (uvicorn's default, said out loud)
FILES_PER_CONNECTION = 2  # a client's socket, and the provider call it may wait on
FILES_RESERVE = 256  # the database pool, logs, the libraries' own files
STOP_TIMEOUT_S = 10  # SIGKILL after this; every request has finished by then in these runs
API_APP = "ticket_api.main:app"


class ServiceStopped(CommandError):
    """The service's process ended during its start-up; the message ends with its last line of output."""


class ServiceDidNotAnswer(CommandError):
    """The service's process runs, but did not answer in time."""


class Service:
    """A process this program started: ready when its /health answers, stopped by its pid (and its children)."""

    def __init__(
        self,
        name: str,
        argv: list[str],
        port: int,
        env: dict[str, str] | None = None,
        log_dir: Path | None = None,
        cwd: Path = PROJECT_ROOT,
    ):
        self.name = name
        self.cwd = cwd
        self.argv = argv
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.env = {**os.environ, **(env or {})}
        self._own_log_dir = log_dir is None  # a temporary folder, removed when the process ends cleanly
        self.log_path = Path(log_dir or tempfile.mkdtemp(prefix="lab-")) / f"{name}.log"
        self.process: subprocess.Popen | None = None

    def start(self, timeout_s: float = 60, ready: str = "health") -> "Service":
        """Start the process and wait until GET /health answers 200, or with ready="port" until it listens.

        ("port" is for an API restarted under load: a blocking-mode API flooded by waiting clients
        may not answer /health for a long while, though it is up.)
        """
        check_port_free(self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = start_process(self.argv, self.cwd, self.env, stdout=log)
        try:
            self._wait_until_ready(timeout_s, ready)
        except BaseException:  # not ready, Ctrl+C or SIGTERM while waiting: stop what was started
            self.stop()
            raise
        return self

    def _wait_until_ready(self, timeout_s: float, ready: str) -> None:
        assert self.process is not None  # started
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServiceStopped(f"{self.name} stopped during start-up: {self.last_log_line()}")
            if self._listening() if ready == "port" else is_healthy(self.url):
                return
            time.sleep(0.05)
        raise ServiceDidNotAnswer(f"{self.name} did not answer within {timeout_s:g} s; see {self.log_path}")

    def stop(self, timeout_s: float = 35) -> int | None:
        """SIGTERM (graceful: in-flight requests finish), then SIGKILL after `timeout_s`; returns the exit code."""
        if self.process is None:
            return None
        stop_process(self.process, timeout_s)
        # uvicorn raises the SIGTERM again once it has shut down gracefully: that is a clean end too.
        if self._own_log_dir and self.process.returncode in (0, -signal.SIGTERM):
            shutil.rmtree(self.log_path.parent, ignore_errors=True)
        return self.process.returncode

    @property
    def pid(self) -> int:
        """The id of the process (started)."""
        assert self.process is not None
        return self.process.pid

    def kill(self) -> int:
        """SIGKILL to the process and its children (uvicorn's workers): a crash, nothing runs on; its exit code."""
        assert self.process is not None  # started
        return stop_process(self.process, graceful=False)

    def _listening(self) -> bool:
        with socket.socket() as sock:
            return sock.connect_ex(("127.0.0.1", self.port)) == 0

    def last_log_line(self) -> str:
        """The last non-empty line of the process's output."""
        lines = [line for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        return lines[-1].strip() if lines else "(no output)"

    def __enter__(self) -> "Service":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def simulator(
    port: int | None = None,
    speed: float = 1.0,
    quota: int = 0,
    extra: list[str] | None = None,
    log_dir: Path | None = None,
    cwd: Path = PROJECT_ROOT,
) -> Service:
    """`python -m simulator` on a free port, quota off unless given."""
    port = port or free_port()
    argv = [sys.executable, "-m", "simulator", "--port", str(port), "--speed", str(speed), "--quota", str(quota)]
    return Service("simulator", argv + (extra or []), port, log_dir=log_dir, cwd=cwd)


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
    if resource is None:
        return None
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
