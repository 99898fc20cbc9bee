"""One level of closed-loop load on the ticket API, measured against the physical limit: what scripts.bench runs.

N users, each a keep-alive connection that sends its next ticket as soon as the last answered,
their first tickets spread evenly over one T (the recording's mean AI time per ticket: no design
beats N ÷ T tickets per second). A level gives its tickets per second (users ÷ mean ticket time ×
the share of 201s, Little's law), the fraction of the limit, latencies, /health's p99 and the CPU
each process spent per ticket; wrk can drive the same level as an outside check.
"""

import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson
import psutil

from scripts.toolkit import wrk
from scripts.toolkit.cli import CommandError, progress
from scripts.toolkit.dataset import random_ticket
from scripts.toolkit.health import probe_health, times_ms
from scripts.toolkit.load import run_on
from scripts.toolkit.quantiles import quantile
from simulator.loadgen import run_load
from simulator.replay import OPERATIONS, load_recording
from simulator.settings import load_settings as simulator_settings
from ticket_api.embedded import PGDATA

HEALTH_INTERVAL_S = 0.1
PROFILE_RATE = 100  # py-spy samples per second
# A level's mean ticket time is a sample of the recording: at 8 users, 30 s hold ~100 tickets and read the
# limit only to ±2% (one standard error). A level runs long enough for this many tickets (8 users: ~2 min).
MIN_TICKETS = 500


@dataclass
class Level:
    """The figures of one mode at one number of users, from the bench's generator or from wrk."""

    mode: str
    users: int
    api_processes: int
    tickets: int  # answered 201 within the measured window
    failed: int
    mean_ms: float  # of every ticket answered within the window
    mean_error_ms: float  # its standard error: the sampling noise of the recorded latencies
    limit: float  # users ÷ T, tickets per second
    p50_ms: float
    p95_ms: float
    health_p99_ms: float
    generator: str = "bench"
    counted_per_s: float = float("nan")  # 201s within the window ÷ its length: Little's law's cross-check
    cpu_ms_per_ticket: dict = field(default_factory=dict)

    @property
    def tickets_per_s(self) -> float:
        """Successful tickets per second: users ÷ mean ticket time × the share of 201s (Little's law)."""
        answered = self.tickets + self.failed
        return self.users / (self.mean_ms / 1000) * self.tickets / answered if answered else 0.0

    @property
    def fraction(self) -> float:
        """Tickets per second ÷ the physical limit."""
        return self.tickets_per_s / self.limit

    @property
    def fraction_error(self) -> float:
        """The fraction's standard error, from the mean's."""
        return self.fraction * self.mean_error_ms / self.mean_ms

    @property
    def api_cpu_ms_per_ticket(self) -> float:
        """The API's CPU per ticket: its event-loop thread and its other threads."""
        return self.cpu_ms_per_ticket["api loop"] + self.cpu_ms_per_ticket["api threads"]


def window_s(duration_s: float, users: int, ticket_s: float) -> float:
    """How long to measure a level: `duration_s`, or longer where that holds fewer than MIN_TICKETS tickets."""
    return max(duration_s, MIN_TICKETS * ticket_s / users)


def recorded_ticket_ms() -> dict[str, float]:
    """The mean recorded latency of each operation the simulator replays at speed 1 (SIM_RECORDING's, if set)."""
    recording = load_recording(simulator_settings([], dict(os.environ)).recording)
    return {op: statistics.fmean(call.latency_ms for call in recording.calls[op]) for op in OPERATIONS}


def ticket_bodies(count: int = 500, seed: int = 7) -> list[bytes]:
    """The JSON bodies of `count` new tickets with varied customers, subjects and bodies (the same every run)."""
    rng = random.Random(seed)
    return [orjson.dumps(random_ticket(rng)) for _ in range(count)]


def ticket_requests(host: str, port: int) -> list[bytes]:
    """Ready-to-send POST /v1/tickets requests, one for each of ticket_bodies()."""
    head = f"POST /v1/tickets HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
    return [f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body for body in ticket_bodies()]


def processes(api_pid: int, simulator_pid: int) -> Callable[[], dict[str, list[psutil.Process]]]:
    """The processes whose CPU time the bench counts, by role: listed anew at each look.

    Anew, because PostgreSQL starts a backend for each connection the API's pool opens under load,
    and a list made at start-up would miss them (their CPU went uncounted before).
    """
    postmaster = psutil.Process(int((PGDATA / "postmaster.pid").read_text().split()[0]))
    roots = {"api": psutil.Process(api_pid), "simulator": psutil.Process(simulator_pid)}

    def family(parent: psutil.Process) -> list[psutil.Process]:
        try:
            return [parent, *parent.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def groups() -> dict[str, list[psutil.Process]]:
        return {
            **{role: family(root) for role, root in roots.items()},
            "postgres": family(postmaster),
            "generator": [psutil.Process(os.getpid())],
        }

    return groups


Snapshot = dict[str, dict[int, float]]  # role (the API's split into loop and threads) -> pid -> CPU seconds


def cpu_snapshot(groups: dict[str, list[psutil.Process]]) -> Snapshot:
    """CPU seconds (user + system) each process of each role has used so far; the API's split into its loop
    and other threads.

    A process's main thread (its thread id is the pid) runs uvicorn's event loop; the others are
    AnyIO's worker threads (the database calls), the watchdog and psycopg's pool.
    """
    snapshot: Snapshot = {"api loop": {}, "api threads": {}, "simulator": {}, "postgres": {}, "generator": {}}
    for role, members in groups.items():
        for process in members:
            try:
                times = process.cpu_times()
                total = times.user + times.system
                if role == "api":
                    loop = sum(t.user_time + t.system_time for t in process.threads() if t.id == process.pid)
                    snapshot["api loop"][process.pid], snapshot["api threads"][process.pid] = loop, total - loop
                else:
                    snapshot[role][process.pid] = total
            except psutil.NoSuchProcess:
                pass
    return snapshot


def cpu_between(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """CPU seconds by role between two snapshots; a process born in between counts whole (it all fell inside)."""
    return {
        role: sum(seconds - before[role].get(pid, 0.0) for pid, seconds in pids.items()) for role, pids in after.items()
    }


async def cpu_of_window(
    groups: Callable[[], dict[str, list[psutil.Process]]], start: float, duration_s: float
) -> dict[str, float]:
    """CPU seconds by role from `start` (time.monotonic()) for `duration_s`: the measured window only.

    psutil reads /proc in a thread, so the generator's loop keeps its pace.
    """
    await asyncio.sleep(start - time.monotonic())
    before = await asyncio.to_thread(lambda: cpu_snapshot(groups()))
    await asyncio.sleep(start + duration_s - time.monotonic())
    after = await asyncio.to_thread(lambda: cpu_snapshot(groups()))
    return cpu_between(before, after)


def measure(
    mode: str,
    users: int,
    duration_s: float,
    ticket_s: float,
    api,
    groups,
    loop: str,
    profile_to: Path | None = None,
    api_processes: int = 1,
    give_up_s: float | None = None,
) -> Level:
    """Drive `users` closed-loop users for `duration_s`, after a ramp of one T over which their first tickets start."""
    progress(f"  {mode}, {users} users, {api_processes} API process(es): {ticket_s:.1f} s ramp + {duration_s:.0f} s")
    host, port = "127.0.0.1", api.port

    async def load_and_cpu() -> tuple[dict, dict[str, float]]:
        # The window starts after the ramp, as run_load's own `measure_from` does (both from now).
        window_start = time.monotonic() + ticket_s
        return await asyncio.gather(
            run_load(
                host,
                port,
                users,
                duration_s,
                HEALTH_INTERVAL_S,
                ramp_s=ticket_s,
                requests=ticket_requests(host, port),
                capture=b"server-timing",
                give_up_s=give_up_s,
            ),
            cpu_of_window(groups, window_start, duration_s),
        )

    with sampled(api.process.pid, profile_to, ticket_s, duration_s):
        load, cpu = run_on(loop)(load_and_cpu())
    # Tickets that ended inside the measured window, whenever they started.
    window_end = load["measure_from"] + duration_s
    window = [call for call in load["calls"] if load["measure_from"] <= call[1] <= window_end]
    done = [call for call in window if call[2] == 201]
    times_of_all = [(end - start) * 1000 for start, end, _, _ in window]
    latencies = sorted((end - start) * 1000 for start, end, _, _ in done)
    return Level(
        mode=mode,
        users=users,
        api_processes=api_processes,
        tickets=len(done),
        failed=len(window) - len(done),
        mean_ms=statistics.fmean(times_of_all) if times_of_all else float("inf"),
        mean_error_ms=statistics.stdev(times_of_all) / len(times_of_all) ** 0.5 if len(times_of_all) > 1 else 0.0,
        limit=users / ticket_s,
        p50_ms=quantile(latencies, 0.5) if latencies else float("nan"),
        p95_ms=quantile(latencies, 0.95) if latencies else float("nan"),
        health_p99_ms=quantile(sorted(load["health_ms"]), 0.99) if load["health_ms"] else float("nan"),
        counted_per_s=len(done) / duration_s,
        # The CPU of the measured window over the tickets that ended in it.
        cpu_ms_per_ticket={role: seconds * 1000 / max(1, len(done)) for role, seconds in cpu.items()},
    )


def measure_with_wrk(users: int, duration_s: float, ticket_s: float, api, loop: str) -> Level:
    """The same level driven by wrk instead, /health probed by this process meanwhile."""
    progress(f"  async, {users} users, wrk: {ticket_s:.1f} s ramp + {duration_s:.0f} s")
    bodies = ticket_bodies()

    async def wrk_and_health() -> tuple[dict, list[dict]]:
        stop = asyncio.Event()
        async with httpx.AsyncClient(base_url=api.url, timeout=60) as client:
            prober = asyncio.create_task(probe_health(client, HEALTH_INTERVAL_S, stop))
            try:
                figures = await asyncio.to_thread(wrk.run_wrk, api.url, users, duration_s, ticket_s, bodies)
            finally:
                stop.set()
            return figures, await prober

    figures, probes = run_on(loop)(wrk_and_health())
    return Level(
        mode="async",
        users=users,
        api_processes=1,
        tickets=figures["requests"] - figures["failed"],
        failed=figures["failed"],
        mean_ms=figures["mean_ms"],
        mean_error_ms=figures["stdev_ms"] / figures["requests"] ** 0.5,
        limit=users / ticket_s,
        p50_ms=figures["p50_ms"],
        p95_ms=figures["p95_ms"],
        health_p99_ms=quantile(sorted(times_ms(probes)), 0.99) if probes else float("nan"),
        generator="wrk",
    )


@contextmanager
def sampled(pid: int, profile_to: Path | None, delay_s: float, duration_s: float) -> Iterator[None]:
    """With a path: py-spy samples, for `duration_s` after `delay_s`, the GIL holder's stack (raw format)."""
    if profile_to is None:
        yield
        return
    py_spy = shutil.which("py-spy", path=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    if py_spy is None:
        raise CommandError("--profile needs py-spy: pip install py-spy")
    command = (
        f"sleep {delay_s:.1f}; exec {py_spy} record -p {pid} -d {int(duration_s)} -r {PROFILE_RATE} -f raw "
        f"-o {profile_to} --threads --gil --nonblocking"
    )
    spy = subprocess.Popen(["sh", "-c", command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        spy.wait(timeout=duration_s + 30)
