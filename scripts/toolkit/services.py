"""A Service, a process ready on /health and stopped by pid, and the simulated provider as one, on a free port of
127.0.0.1; the bounds uvicorn gives the API (LIMIT_CONCURRENCY, KEEP_ALIVE_S)."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from scripts.toolkit.cli import PROJECT_ROOT, CommandError
from scripts.toolkit.processes import check_port_free, free_port, start_process, stop_process

LIMIT_CONCURRENCY = 2048  # connections (and requests in flight) per API process: the bench's 1,024 users fit
KEEP_ALIVE_S = 5  # an idle keep-alive connection is closed after this long (uvicorn's default, said out loud)


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


def is_healthy(url: str, timeout_s: float = 1) -> bool:
    """True when GET `url`/health answers 200 now (a service's readiness, from synchronous code)."""
    try:
        return httpx.get(f"{url}/health", timeout=timeout_s).status_code == 200
    except httpx.TransportError:
        return False
