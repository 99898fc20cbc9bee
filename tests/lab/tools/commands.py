"""Run the lab's scripts as a student does, in a child process, and check what they leave behind."""

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from scripts.toolkit.cli import PROJECT_ROOT

# What every recorded row holds (scripts/toolkit/measure/held_series.py), as compare.json and capacity.json keep it.
HELD_FIELDS = (
    "t",
    "health_s",
    "api_answers",
    "lag_s",
    "threads_borrowed",
    "threads_total",
    "db_in_use",
    "db_max",
    "db_waiting",
    "db_lent_per_s",
    "api_in_flight",
    "sim_in_flight",
    "tickets_per_s",
)


def run_module(
    module: str, *args: str, env: dict[str, str] | None = None, timeout_s: float = 180
) -> subprocess.CompletedProcess:
    """`python -m module args...` from the project folder; its output as text."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout_s,
    )


def listening(url: str) -> bool:
    """True if something accepts connections at the URL's host and port."""
    parts = urlsplit(url)
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex((parts.hostname, parts.port)) == 0


@contextmanager
def ctrl_c_as_from_a_terminal() -> Iterator[None]:
    """Start processes in this block with Python's own Ctrl+C handler, as a terminal's foreground job has it: a shell's
    background job (`cmd &` in a script, a CI runner's) ignores SIGINT, and so would every process it starts."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
