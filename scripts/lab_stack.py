"""The whole lab for one experiment, from nothing: the database, then a simulator (quota off) and the API per mode.

`scripts.compare` and `scripts.capacity` share it. Whatever it starts is stopped by pid when the
`with` block ends: normally, on an error, on Ctrl+C and on SIGTERM (scripts.cli.run makes it one).
"""

import argparse
import importlib.util
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Iterator

from scripts import stack
from scripts.cli import CommandError, progress
from scripts.db import init
from ticket_api.config import load_settings
from ticket_api.database import connect, resolve_dsn, shown_dsn

MODES = ("blocking", "async", "thread")
LOOPS = ("asyncio", "uvloop")  # asyncio's own loop is the course's; uvloop is the optional extra
STOP_TIMEOUT_S = 10  # SIGKILL after this; every request has finished by then in these experiments


class Lab:
    """The running database; `api(mode)` starts a simulator and the API in that mode on top of it."""

    def __init__(self, dsn: str, speed: float, log_dir: Path, clock: "Clock"):
        self.dsn = dsn
        self.speed = speed
        self.log_dir = log_dir
        self.clock = clock
        self.simulator: stack.Service | None = None

    @contextmanager
    def api(self, mode: str, workers: int = 1, env: dict[str, str] | None = None,
            loop: str = "asyncio") -> Iterator[stack.Service]:
        """The API in INTAKE_MODE=`mode` (and `env`) on `loop` with `workers` processes, in front of a simulator
        of its own.

        A fresh simulator per mode replays the same seeded provider latencies to every mode, so the
        modes differ only in how they wait.
        """
        name = run_name(mode, loop)
        folder = self.log_dir / name
        with started(stack.simulator(speed=self.speed, quota=0, log_dir=folder)) as simulator:
            self.simulator = simulator
            settings = {"INTAKE_MODE": mode, "DATABASE_URL": self.dsn, **(env or {})}
            with started(stack.api(f"{simulator.url}/v1", env=settings, workers=workers, log_dir=folder,
                                   loop=loop)) as api:
                progress(f"[{self.clock}] {name}: simulator at {simulator.url} (speed {self.speed:g}, quota off), "
                         f"API at {api.url} on {loop}")
                yield api

    def last_ticket_id(self) -> int:
        """The highest ticket id now: tickets created from now on have higher ones."""
        with connect(self.dsn) as conn:
            return conn.execute("SELECT coalesce(max(id), 0) FROM tickets").fetchone()[0]

    def provider_time(self, after_id: int) -> tuple[int, float | None]:
        """(tickets saved, mean provider seconds per ticket: classify + draft + embed) after `after_id`."""
        with connect(self.dsn) as conn:
            count, mean_ms = conn.execute(
                "SELECT count(*), avg(classify_ms + draft_ms + embed_ms) FROM ticket_ai_results WHERE ticket_id > %s",
                (after_id,),
            ).fetchone()
        return count, None if mean_ms is None else float(mean_ms) / 1000


@contextmanager
def running_lab(speed: float, log_dir: Path, clock: "Clock") -> Iterator[Lab]:
    """Start the database (the small data set loaded if missing)."""
    # The parent starts the embedded server and so owns its lifetime; the APIs get its URL.
    dsn = resolve_dsn(load_settings())
    progress(f"database {shown_dsn(dsn)}: {init(dsn, 'small')}")
    yield Lab(dsn, speed, log_dir, clock)


@contextmanager
def started(service: stack.Service) -> Iterator[stack.Service]:
    """Start the service; stop it when the block ends, however it ends."""
    try:
        yield service.start()
    finally:
        service.stop(STOP_TIMEOUT_S)


def output_folder(out: str | None, name: str) -> Path:
    """The folder `out`, or a new `.lab/NAME-YYYYmmdd-HHMMSS` in the project (.lab is not committed)."""
    folder = Path(out) if out else stack.PROJECT_ROOT / ".lab" / f"{name}-{datetime.now():%Y%m%d-%H%M%S}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def parse_modes(text: str) -> list[str]:
    """`blocking,async,thread` as a list of INTAKE_MODE values (an argparse type)."""
    modes = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [mode for mode in modes if mode not in MODES]
    if not modes or unknown:
        raise argparse.ArgumentTypeError(f"{text!r}: give one or more of {', '.join(MODES)}, separated by commas")
    return modes


def run_name(mode: str, loop: str) -> str:
    """`blocking` on asyncio's loop (the default), `blocking-uvloop` on uvloop: for progress lines and file names."""
    return mode if loop == "asyncio" else f"{mode}-{loop}"


def event_loop(text: str) -> str:
    """`asyncio` or `uvloop` (an argparse type); uvloop must be installed, else CommandError (exit code 2)."""
    if text not in LOOPS:
        raise argparse.ArgumentTypeError(f"{text!r}: give {' or '.join(LOOPS)}")
    if text == "uvloop" and importlib.util.find_spec("uvloop") is None:
        raise CommandError('uvloop is not installed: python -m pip install -e ".[uvloop]" (macOS and Linux only)')
    return text


def parse_loops(text: str) -> list[str]:
    """`asyncio,uvloop` as a list of event loops (an argparse type), each checked by event_loop()."""
    loops = [event_loop(part.strip()) for part in text.split(",") if part.strip()]
    if not loops:
        raise argparse.ArgumentTypeError(f"{text!r}: give {' or '.join(LOOPS)}, or both separated by a comma")
    return loops


class Clock:
    """Time since the experiment started, shown as `m:ss` in progress lines."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def __str__(self) -> str:
        minutes, seconds = divmod(int(time.monotonic() - self.started), 60)
        return f"{minutes}:{seconds:02d}"


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell: the first one left-aligned, the others right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]

    def line(cells: list[str]) -> str:
        padded = [str(cell).ljust(w) if i == 0 else str(cell).rjust(w) for i, (cell, w) in enumerate(zip(cells, widths))]
        return "  ".join(padded).rstrip()

    return "\n".join(line(cells) for cells in [headers, *rows])
