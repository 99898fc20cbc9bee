"""A process tree's CPU time, read here only: a process's (`process_cpu_s`), a process's and its children's
(`cpu_seconds`), this process's (`own_cpu_s`) and its ended children's (`children_cpu_s`); and the CPU each process
of a load run spent over its measured window, by role: the API (its event-loop thread and its other threads), the
simulator, PostgreSQL and the load generator (this process)."""

import asyncio
import functools
import json
import os
import sys
import time
from collections.abc import Callable

import psutil

from scripts.toolkit.cli import CommandError, progress
from scripts.toolkit.running.postgres import postmaster

if sys.platform != "win32":
    import resource

Roles = Callable[[], dict[str, list[psutil.Process]]]
Snapshot = dict[str, dict[int, float]]  # role (the API's split into loop and threads) -> pid -> CPU seconds


def processes_by_role(api_pid: int, simulator_pid: int) -> Roles:
    """The processes whose CPU time is counted, by role: listed anew at each look.

    Anew, because PostgreSQL starts a backend for each connection the API's pool opens under load,
    and a list made at start-up would miss them. A PostgreSQL that is not the lab's (DATABASE_URL)
    is not counted: a warning says so.
    """
    server = counted_postgres()
    roots = {"api": psutil.Process(api_pid), "simulator": psutil.Process(simulator_pid)}
    if server is not None:
        roots["postgres"] = server

    def family(parent: psutil.Process) -> list[psutil.Process]:
        try:
            return [parent, *parent.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def roles() -> dict[str, list[psutil.Process]]:
        return {**{role: family(root) for role, root in roots.items()}, "generator": [psutil.Process(os.getpid())]}

    return roles


@functools.cache
def counted_postgres() -> psutil.Process | None:
    """The lab's PostgreSQL server, whose CPU is counted; None, with a warning the first time, where it is not."""
    try:
        return postmaster()
    except CommandError as exc:
        progress(f"warning: PostgreSQL's CPU is not counted: {exc}")
        return None


def process_cpu_s(process: psutil.Process) -> float:
    """CPU seconds (user + system) a running process has used so far."""
    times = process.cpu_times()
    return times.user + times.system


def cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by a process and its children (the API's worker processes)."""
    process = psutil.Process(pid)
    return sum(process_cpu_s(each) for each in [process, *process.children(recursive=True)])


def own_cpu_s() -> float:
    """CPU seconds (user + system) this process has used so far, every thread of it: a load generator's own."""
    return time.process_time()


def children_cpu_s() -> float | None:
    """CPU seconds (user + system) used so far by this process's children that have ended and been waited for, and
    by theirs (wrk, Locust); None on Windows, which keeps no such count."""
    if sys.platform != "win32":
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    return None


def cpu_snapshot(groups: dict[str, list[psutil.Process]]) -> Snapshot:
    """CPU seconds (user + system) each process of each role has used so far; the API's split into its loop
    and other threads.

    A process's main thread (its thread id is the pid) runs uvicorn's event loop; the others are
    AnyIO's worker threads (the database calls), the watchdog and psycopg's pool.
    """
    snapshot: Snapshot = {"api loop": {}, "api threads": {}}
    for role, members in groups.items():
        for process in members:
            try:
                total = process_cpu_s(process)
                if role == "api":
                    loop = sum(t.user_time + t.system_time for t in process.threads() if t.id == process.pid)
                    snapshot["api loop"][process.pid], snapshot["api threads"][process.pid] = loop, total - loop
                else:
                    snapshot.setdefault(role, {})[process.pid] = total
            except psutil.NoSuchProcess:
                pass
    return snapshot


def cpu_between(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """CPU seconds by role between two snapshots; a process born in between counts whole (it all fell inside)."""
    return {
        role: sum(seconds - before.get(role, {}).get(pid, 0.0) for pid, seconds in pids.items())
        for role, pids in after.items()
    }


async def cpu_of_window(roles: Roles, start: float, duration_s: float) -> dict[str, float]:
    """CPU seconds by role from `start` (time.perf_counter()) for `duration_s`: the measured window only.

    psutil reads /proc in a thread, so the generator's loop keeps its pace.
    """
    await asyncio.sleep(start - time.perf_counter())
    before = await asyncio.to_thread(lambda: cpu_snapshot(roles()))
    await asyncio.sleep(start + duration_s - time.perf_counter())
    after = await asyncio.to_thread(lambda: cpu_snapshot(roles()))
    return cpu_between(before, after)


def pace_ms(rounds: int = 7) -> float:
    """The machine's pace: the fastest of `rounds` timings (ms of CPU) of a fixed piece of Python work.

    Lower is faster. Timed before and after a run, it tells two phases of the machine apart: in a
    slow one, every process spends more CPU on the same work. The fastest round, so that another
    process's burst does not count.
    """
    times = []
    for _ in range(rounds):
        started = own_cpu_s()
        for number in range(20_000):
            json.loads(json.dumps({"id": number, "subject": f"ticket {number}", "tags": [number, str(number)]}))
        times.append((own_cpu_s() - started) * 1000)
    return min(times)
