"""One level of closed-loop load on a ticket API, measured against the physical limit: what scripts.bench runs.

N users on the one closed loop (toolkit.load.closed_loop), each sending its next ticket as soon as the last
answered, their first tickets spread evenly over one T (the recording's mean AI time per ticket:
no design beats N ÷ T tickets per second). A level gives its tickets per second (users ÷ mean
ticket time × the share of 201s, Little's law), the fraction of the limit, latencies, /health's
p99 (the one prober, over the measured window) and the CPU each process spent per ticket; wrk can
drive the same level. A level needs only an API's URL and processes: the reference app's is alike.
"""

import asyncio
import os
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import aiohttp
import httpx
import orjson

from scripts.stall import probe_health, times_ms
from scripts.toolkit.cli import progress
from scripts.toolkit.dataset import random_ticket
from scripts.toolkit.load import wrk
from scripts.toolkit.load.closed_loop import Send, closed_loop, run_on, sender, session
from scripts.toolkit.measure import profile
from scripts.toolkit.measure.cpu import Roles, cpu_of_window
from scripts.toolkit.measure.quantiles import quantile
from scripts.toolkit.running.commands import in_own_process
from simulator.replay import OPERATIONS, load_recording
from simulator.settings import load_settings as simulator_settings

HEALTH_INTERVAL_S = 0.1
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
    app: str = "lab"  # "reference": scripts.reference_api, measured beside the API with the same generator
    counted_per_s: float = float("nan")  # 201s within the window ÷ its length: Little's law's cross-check
    bench_fraction: float = float("nan")  # wrk's levels: the bench's own fraction in the windows taken in turn
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

    @property
    def api_cpu_per_simulator_cpu(self) -> float:
        """The API's CPU per ticket over the simulator's in the same window: the machine's pace cancels out."""
        return self.api_cpu_ms_per_ticket / self.cpu_ms_per_ticket["simulator"]

    @property
    def generator_share(self) -> float:
        """The load generator's CPU per ticket ÷ the API's: how much of the work was the measuring itself."""
        return self.cpu_ms_per_ticket["generator"] / self.api_cpu_ms_per_ticket


def level_figures(level: Level) -> dict:
    """A level's figures, with those computed from them."""
    return {**asdict(level), "tickets_per_s": level.tickets_per_s, "fraction": level.fraction}


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


def ticket_users(opened: aiohttp.ClientSession, users: int) -> list[Send]:
    """`users` request factories that POST the tickets of ticket_bodies() in turn, each from a ticket of its own."""
    tickets = [("POST", "/v1/tickets", body) for body in ticket_bodies()]
    return [sender(opened, tickets, first) for first in range(users)]


async def health_during(
    url: str, start: float, duration_s: float, interval_s: float = HEALTH_INTERVAL_S
) -> list[float]:
    """GET /health's times (ms) by the one prober, from `start` (time.perf_counter()) for `duration_s`.

    The prober runs in a process of its own, so that every /health figure is the server's alone: in
    the load generator's process, its answers would wait for the generator's own event loop.
    """
    start_at = time.time() + start - time.perf_counter()  # a wall-clock time, the same in every process
    return await in_own_process(probe_window, url, start_at, duration_s, interval_s)


def probe_window(url: str, start_at: float, duration_s: float, interval_s: float) -> list[float]:
    """GET /health every `interval_s` from `start_at` (time.time()) for `duration_s`: the answers' times (ms)."""

    async def window() -> list[float]:
        await asyncio.sleep(start_at - time.time())
        stop = asyncio.Event()
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            prober = asyncio.create_task(probe_health(client, interval_s, stop))
            await asyncio.sleep(start_at + duration_s - time.time())
            stop.set()
            return times_ms(await prober)

    return asyncio.run(window())


def measure(
    mode: str,
    users: int,
    duration_s: float,
    ticket_s: float,
    url: str,
    roles: Roles,
    loop: str = "asyncio",
    profile_of: tuple[int, Path] | None = None,
    api_processes: int = 1,
    give_up_s: float | None = None,
    app: str = "lab",
) -> Level:
    """Drive `users` closed-loop users for `duration_s`, after a ramp of one T over which their first tickets start.

    With `profile_of` (pid, path), py-spy samples that process over the measured window.
    """
    who = f"{api_processes} API process(es)" if app == "lab" else f"the {app}"
    progress(f"  {mode}, {users} users, {who}: {ticket_s:.1f} s ramp + {duration_s:.0f} s")

    async def load_and_cpu():  # the window starts after the ramp, for every part alike
        start = time.perf_counter() + ticket_s
        async with session(url, users) as opened:
            parts = [
                closed_loop(ticket_users(opened, users), duration_s=duration_s, ramp_s=ticket_s, give_up_s=give_up_s),
                cpu_of_window(roles, start, duration_s),
                health_during(url, start, duration_s),
            ]
            if profile_of:
                parts.append(profile.sampled(profile_of[0], profile_of[1], start, duration_s))
            return await asyncio.gather(*parts), start

    (load, cpu, health_ms, *_), start = run_on(loop)(load_and_cpu())
    window = load.ended_within(start, start + duration_s)  # tickets that ended inside it, whenever they started
    done = [call for call in window if call.outcome.ok]
    times_of_all = [call.ms for call in window]
    latencies = sorted(call.ms for call in done)
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
        health_p99_ms=quantile(health_ms, 0.99) if health_ms else float("nan"),
        counted_per_s=len(done) / duration_s,
        app=app,
        # The CPU of the measured window over the tickets that ended in it.
        cpu_ms_per_ticket={role: seconds * 1000 / max(1, len(done)) for role, seconds in cpu.items()},
    )


def measure_with_wrk(users: int, duration_s: float, ticket_s: float, url: str, loop: str = "asyncio") -> Level:
    """The same level driven by wrk instead, /health probed by this process over the same window."""
    progress(f"  async, {users} users, wrk: {ticket_s:.1f} s ramp + {duration_s:.0f} s")

    async def wrk_and_health() -> tuple[dict, list[float]]:
        start = time.perf_counter() + ticket_s
        run = asyncio.to_thread(wrk.run_wrk, url, users, duration_s, ticket_s, ticket_bodies())
        return await asyncio.gather(run, health_during(url, start, duration_s))

    figures, health_ms = run_on(loop)(wrk_and_health())
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
        health_p99_ms=quantile(health_ms, 0.99) if health_ms else float("nan"),
        generator="wrk",
    )


def ticket_alone(url: str, duration_s: float, loop: str = "asyncio") -> tuple[float, float]:
    """The mean time of one ticket with 2 users (nothing waits but for the provider), and its standard error (s)."""
    progress(f"  one ticket alone: 2 users for {duration_s:g} s")

    async def alone():
        async with session(url, 2) as opened:
            return await closed_loop(ticket_users(opened, 2), duration_s=duration_s)

    times = [call.end - call.start for call in run_on(loop)(alone()).ok]
    return statistics.fmean(times), statistics.stdev(times) / len(times) ** 0.5
