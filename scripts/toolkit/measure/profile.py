"""Where the API's threads spend their CPU: py-spy samples it for a window (`sampled`), `shares` reads the samples."""

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path

from scripts.toolkit.cli import CommandError
from scripts.toolkit.processes import start_process, stop_process

RATE = 100  # samples per second


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


def shares(path: Path, seconds: float, count: int = 8) -> list[str]:
    """Where the API's threads spent their CPU (py-spy raw profile, --threads): each kind's share of a core,
    then its busiest packages and functions (the innermost frame of each sample)."""
    kinds: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        stack, _, number = line.rpartition(" ")
        thread, *frames = stack.split(";")
        name = thread.partition(": ")[2]
        kind = "event-loop thread" if name == "MainThread" else "other threads"
        kind = "worker threads" if name.startswith("AnyIO worker") else kind
        figures = kinds.setdefault(kind, {"samples": 0, "package": {}, "function": {}})
        figures["samples"] += int(number)
        # "function (package/module.py:line)"
        function, _, where = (frames[-1] if frames else "?").partition(" (")
        package = where.split("/")[0].split(":")[0].removesuffix(".py") or "?"
        module = where.rpartition(":")[0]
        for table, key in ((figures["package"], package), (figures["function"], f"{function} ({module})")):
            table[key] = table.get(key, 0) + int(number)
    lines = []
    for kind, figures in sorted(kinds.items(), key=lambda item: -item[1]["samples"]):
        samples = figures["samples"]
        lines.append(f"{kind}: {samples / (seconds * RATE):.0%} of a core")
        for table in ("package", "function"):
            ranked = sorted(figures[table].items(), key=lambda item: -item[1])[:count]
            lines += [f"  {n / samples:6.1%}  {key}" for key, n in ranked]
    return lines
