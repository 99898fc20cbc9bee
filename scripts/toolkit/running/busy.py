"""A busy machine on purpose: processes that keep the CPU busy, and pgbench keeping PostgreSQL busy, while a command
runs (`python -m scripts.busy`)."""

import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import Popen

from scripts.toolkit.cli import CommandError, progress
from scripts.toolkit.running.commands import running
from scripts.toolkit.running.postgres import client_program

SPIN = "while True: pass"  # one core's worth of Python, as a browser tab or an editor's indexer takes it
# PostgreSQL's own work, about 0.3 s of one core a query here, with nothing to read or write: no data set needed.
LONG_QUERY = "SELECT count(*) FROM generate_series(1, 3000000);\n"
PROGRESS = re.compile(r"^progress: [\d.]+ s, ([\d.]+) tps, lat ([\d.]+) ms")
STARTED_WITHIN_S = 15


@dataclass
class Loads:
    """The loads under way: the CPU's processes, and pgbench with its output (one progress line a second)."""

    cpu: list[Popen] = field(default_factory=list)
    database: Popen | None = None
    database_log: Path | None = None
    started: float = field(default_factory=time.monotonic)

    def stopped(self) -> str | None:
        """Why a load is no longer running, or None while every one runs."""
        if any(process.poll() is not None for process in self.cpu):
            return "a CPU load stopped"
        if self.database is not None and self.database.poll() is not None:
            return f"pgbench stopped: {self._last_database_line()}"
        return None

    def database_queries(self) -> tuple[int, float | None]:
        """How many long queries PostgreSQL has answered so far, and their mean time in ms (from pgbench's progress)."""
        readings = [PROGRESS.match(line) for line in self._database_lines()]
        rates = [(float(match[1]), float(match[2])) for match in readings if match]
        count = round(sum(tps for tps, _ in rates))  # one line a second: its rate is that second's count
        mean_ms = sum(tps * ms for tps, ms in rates) / count if count else None
        return count, mean_ms

    def _database_lines(self) -> list[str]:
        if self.database_log is None or not self.database_log.exists():
            return []
        return self.database_log.read_text(errors="replace").splitlines()

    def _last_database_line(self) -> str:
        lines = [line.strip() for line in self._database_lines() if line.strip()]
        return lines[-1] if lines else "(no output)"


@contextmanager
def busy_machine(cpu: int, database: int, dsn: str) -> Iterator[Loads]:
    """`cpu` processes that spin, and `database` pgbench clients that each run LONG_QUERY over and over on `dsn`;
    running once the block starts, and stopped by pid however it ends."""
    with ExitStack() as stack:
        loads = Loads()
        for _ in range(cpu):
            loads.cpu.append(stack.enter_context(running([sys.executable, "-c", SPIN])))
        if database:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lab-busy-")))
            script = folder / "long-query.sql"
            script.write_text(LONG_QUERY)
            loads.database_log = folder / "pgbench.log"
            # -n: no vacuum of pgbench's own tables (none are made); -P 1: a progress line a second, read above.
            argv = [str(client_program("pgbench")), "-n", "-c", str(database), "-j", str(database)]
            argv += ["-T", str(7 * 24 * 3600), "-P", "1", "-f", str(script), dsn]
            with open(loads.database_log, "wb") as log:
                loads.database = stack.enter_context(running(argv, stdout=log))
            _wait_for_first_queries(loads)
        loads.started = time.monotonic()
        yield loads


def _wait_for_first_queries(loads: Loads) -> None:
    """Return once pgbench has answered its first queries; CommandError if it stops or takes too long."""
    deadline = time.monotonic() + STARTED_WITHIN_S
    while loads.database_queries()[0] == 0:
        reason = loads.stopped()
        if reason is not None:
            raise CommandError(f"the database load did not start ({reason})")
        if time.monotonic() > deadline:
            raise CommandError(f"the database load answered no query within {STARTED_WITHIN_S} s")
        time.sleep(0.2)


def describe_loads(cpu: int, database: int) -> str:
    """The loads in words: `1 CPU-bound process and 2 database loads`."""
    parts = []
    if cpu:
        parts.append(f"{cpu} CPU-bound process" + ("" if cpu == 1 else "es"))
    if database:
        parts.append(f"{database} database load" + ("" if database == 1 else "s") + " (pgbench, a long query each)")
    return " and ".join(parts) or "no load"


def report_loads(loads: Loads) -> None:
    """A progress line: how long the loads ran, and what PostgreSQL did meanwhile."""
    seconds = time.monotonic() - loads.started
    line = f"busy: the loads ran {seconds:.0f} s"
    if loads.database is not None:
        count, mean_ms = loads.database_queries()
        line += f"; PostgreSQL answered {count} long queries" + (f", {mean_ms:.0f} ms each" if mean_ms else "")
    progress(line)
