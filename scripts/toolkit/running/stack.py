"""The whole lab per INTAKE_MODE, from nothing: the database, then a simulator and the API in a mode on top of it.

`running_stack()` starts the database and `Stack.api(mode)` a simulator (quota off) and the API in that
mode (compare, capacity, bench). Whatever it starts is stopped by pid when the `with` block ends:
normally, on an error, on Ctrl+C and on SIGTERM (toolkit.cli.run makes it one).
"""

import argparse
import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scripts.toolkit.cli import CommandError, progress
from scripts.toolkit.commands.options import Clock, one_or_more_of
from scripts.toolkit.databases import init
from scripts.toolkit.running.apis import API_APP, api, started
from scripts.toolkit.services import Service, simulator
from ticket_api.config import load_settings
from ticket_api.instruments.connections import resolve_dsn, shown_dsn

MODES = ("blocking", "async", "thread")  # INTAKE_MODE's values (Settings.intake_mode), in the course's order
LOOPS = ("asyncio", "uvloop")  # asyncio's own loop is the course's; uvloop is the optional extra
# The exit codes of the commands that start the whole lab and create tickets (compare, capacity).
EXIT_CODES = (
    "Exit codes: 0 every ticket answered 201, 1 some did not, 2 a port is in use, a start-up failed or bad arguments."
)


class Stack:
    """The running database; `api(mode)` starts a simulator and the API in that mode on top of it."""

    def __init__(self, dsn: str, speed: float, log_dir: Path, clock: Clock):
        self.dsn = dsn
        self.speed = speed
        self.log_dir = log_dir
        self.clock = clock
        self._simulator: Service | None = None

    @property
    def simulator(self) -> Service:
        """The simulator of the API started last."""
        if self._simulator is None:
            raise RuntimeError("no API started yet: the simulator starts with it")
        return self._simulator

    @contextmanager
    def api(
        self,
        mode: str,
        workers: int = 1,
        env: dict[str, str] | None = None,
        loop: str = "asyncio",
        factory: str | None = None,
    ) -> Iterator[Service]:
        """The API in INTAKE_MODE=`mode` (and `env`) on `loop` with `workers` processes, in front of a simulator
        of its own; `factory`, a function that makes it otherwise (scripts/client_apps.py's).

        A fresh simulator per mode replays the same seeded provider latencies to every mode, so the
        modes differ only in how they wait.
        """
        name = run_name(mode, loop)
        folder = self.log_dir / name
        with started(simulator(speed=self.speed, quota=0, log_dir=folder)) as provider:
            self._simulator = provider
            settings = {"INTAKE_MODE": mode, "DATABASE_URL": self.dsn, **(env or {})}
            app, made = (factory, True) if factory else (API_APP, False)
            service = api(
                f"{provider.url}/v1", env=settings, workers=workers, log_dir=folder, loop=loop, app=app, factory=made
            )
            with started(service) as server:
                progress(
                    f"[{self.clock}] {name}: simulator at {provider.url} (speed {self.speed:g}, quota off), "
                    f"API at {server.url} on {loop}"
                )
                yield server


@contextmanager
def running_stack(speed: float, log_dir: Path, clock: Clock) -> Iterator[Stack]:
    """Start the database (the small data set loaded if missing)."""
    # The parent starts the embedded server and so owns its lifetime; the APIs get its URL.
    dsn = resolve_dsn(load_settings())
    progress(f"database {shown_dsn(dsn)}: {init(dsn, 'small')}")
    yield Stack(dsn, speed, log_dir, clock)


parse_modes = one_or_more_of(MODES)  # `blocking,async,thread` as a list of INTAKE_MODE values (an argparse type)


def add_modes_argument(parser: argparse.ArgumentParser, default: list[str]) -> None:
    """--modes: the INTAKE_MODE values to run, in order (compare, capacity)."""
    parser.add_argument(
        "--modes",
        type=parse_modes,
        default=default,
        help=f"INTAKE_MODE values in the order to run (default {','.join(default)})",
    )


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
