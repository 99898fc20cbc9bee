"""Where the API's threads spend their CPU: py-spy samples it for a window (`sampled`); `shares` reads the samples by
thread, package and function, `instrument_shares` by instrument of ticket_api/instruments/."""

import asyncio
import linecache
import os
import re
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from scripts.toolkit.cli import CommandError
from scripts.toolkit.processes import start_process, stop_process

RATE = 100  # samples per second
FRAME = re.compile(r"\((?P<file>[^()]*):(?P<line>\d+)\)$")
# A line of an instrument that hands the request on: what runs below it is the app's work, not the instrument's.
HANDED_ON = re.compile(r"await (self\.app|send|receive)\(|return self\.app\(|super\(\)\.")


def py_spy() -> str:
    """The py-spy beside this Python (the venv's) or on the PATH; CommandError if there is none."""
    found = shutil.which("py-spy", path=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    if found is None:
        raise CommandError("--profile needs py-spy: pip install py-spy")
    return found


async def sampled(pid: int, path: Path, start: float, duration_s: float) -> None:
    """From `start` (time.perf_counter()), py-spy samples `pid` for `duration_s`: the GIL holder's stack, raw format."""
    await asyncio.sleep(start - time.perf_counter())
    argv = [py_spy(), "record", "-p", str(pid), "-d", str(int(duration_s)), "-r", str(RATE), "-f", "raw"]
    spy = start_process([*argv, "-o", str(path), "--threads", "--gil", "--nonblocking"])
    try:
        await asyncio.to_thread(spy.wait, duration_s + 30)
    finally:
        stop_process(spy)


def samples(path: Path) -> Iterator[tuple[str, list[str], int]]:
    """py-spy's raw profile (--threads) as (thread name, frames outermost first, samples): a frame reads
    `function (package/module.py:line)`."""
    for line in path.read_text().splitlines():
        stack, _, number = line.rpartition(" ")
        thread, *frames = stack.split(";")
        yield thread.partition(": ")[2], frames, int(number)


def instrument_shares(path: Path, root: Path) -> dict[str, float]:
    """Each instrument's share of the API's samples: a sample is an instrument's when the innermost frame of the
    project's own code in it is that instrument's, and not a line that hands the request on (to the app, to the
    server, to psycopg's own method)."""
    counted = dict.fromkeys(sorted(module.stem for module in (root / "ticket_api/instruments").glob("*.py")), 0)
    total = 0
    for _, frames, number in samples(path):
        total += number
        for frame in reversed(frames):
            where = FRAME.search(frame)
            if where and where["file"].startswith("ticket_api/"):
                module = where["file"].removeprefix("ticket_api/instruments/").removesuffix(".py")
                line = linecache.getline(str(root / where["file"]), int(where["line"]))
                if module in counted and not HANDED_ON.search(line):
                    counted[module] += number
                break
    return {module: number / total for module, number in counted.items() if total}


def shares(path: Path, seconds: float, count: int = 8) -> list[str]:
    """Where the API's threads spent their CPU (py-spy raw profile, --threads): each kind's share of a core,
    then its busiest packages and functions (the innermost frame of each sample)."""
    kinds: dict[str, dict[str, Counter[str]]] = {}
    for name, frames, number in samples(path):
        kind = "event-loop thread" if name == "MainThread" else "other threads"
        kind = "worker threads" if name.startswith("AnyIO worker") else kind
        figures = kinds.setdefault(kind, {"package": Counter(), "function": Counter()})
        # "function (package/module.py:line)"
        function, _, where = (frames[-1] if frames else "?").partition(" (")
        figures["package"][where.split("/")[0].split(":")[0].removesuffix(".py") or "?"] += number
        figures["function"][f"{function} ({where.rpartition(':')[0]})"] += number
    lines = []
    for kind, figures in sorted(kinds.items(), key=lambda item: -item[1]["package"].total()):
        sampled_here = figures["package"].total()
        lines.append(f"{kind}: {sampled_here / (seconds * RATE):.0%} of a core")
        for table in figures.values():
            lines += [f"  {n / sampled_here:6.1%}  {key}" for key, n in table.most_common(count)]
    return lines
