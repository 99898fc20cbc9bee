"""The one closed load loop of the tools: each user sends its next request as soon as its last one answered.

A user is a request factory: an async function that sends one request and says how it went
(`Outcome`). `getter()` makes one from an httpx client and a path; commands write their own for
tickets. The loop times each call and counts this process's CPU, so a generator that was its own
limit shows (`Load.saturated`). Every time is in milliseconds.
"""

import asyncio
import math
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

import httpx

from scripts.toolkit.answers import describe_failure, server_total_ms
from scripts.toolkit.cli import CommandError

# A generator that used 90% of a core was busy itself: its figures are its own limit (Locust warns there too).
SATURATED_CPU_SHARE = 0.9
WARM_UP_REQUESTS = 10


@dataclass
class Outcome:
    """How one request went: answered with success or not, why not, and the API's own time (Server-Timing)."""

    ok: bool
    failure: str | None = None
    server_ms: float | None = None


Send = Callable[[], Awaitable[Outcome]]


def generator_saturated(cpu_s: float, wall_s: float) -> bool:
    """True when this process used about one whole core: the load generator, not the server, set the pace."""
    return wall_s > 0 and cpu_s / wall_s >= SATURATED_CPU_SHARE


@dataclass
class Load:
    """What one closed-loop load measured: answered requests' times, failures, wall and CPU seconds.

    `server_ms` holds the time the API itself reports for each answer (its Server-Timing `total`),
    when it sends one: the client's time minus that is the network and the generator.
    """

    latencies_ms: list[float]
    server_ms: list[float]
    errors: list[str]
    wall_s: float
    cpu_s: float

    @property
    def rps(self) -> float:
        """Successful requests per second of wall time."""
        return len(self.latencies_ms) / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_share(self) -> float:
        """This process's CPU time over the wall time (1.0 = one core busy all along)."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def saturated(self) -> bool:
        """The generator itself was the limit; see generator_saturated()."""
        return generator_saturated(self.cpu_s, self.wall_s)


def outcome_of(answer: httpx.Response | httpx.HTTPError) -> Outcome:
    """The Outcome of an httpx answer (2xx is a success) or of its transport error."""
    if isinstance(answer, httpx.HTTPError):
        return Outcome(False, describe_failure(answer))
    if answer.is_success:
        return Outcome(True, server_ms=server_total_ms(answer))
    return Outcome(False, describe_failure(answer))


def getter(client: httpx.AsyncClient, path: str) -> Send:
    """A request factory: GET `path` with this client."""

    async def send() -> Outcome:
        try:
            return outcome_of(await client.get(path))
        except httpx.HTTPError as exc:
            return outcome_of(exc)

    return send


async def closed_loop(
    users: list[Send],
    *,
    requests: int | None = None,
    duration_s: float | None = None,
    stop: asyncio.Event | None = None,
) -> Load:
    """Every user sends its next request as soon as its last one answered, until `requests` are sent,
    `duration_s` is over or `stop` is set (whichever comes first)."""
    if requests is None and duration_s is None and stop is None:
        raise ValueError("give requests, duration_s or stop: the load would never end")
    latencies_ms: list[float] = []
    server_ms: list[float] = []
    errors: list[str] = []
    sent = 0
    deadline = time.monotonic() + duration_s if duration_s is not None else math.inf

    def more() -> bool:
        nonlocal sent
        if (requests is not None and sent >= requests) or time.monotonic() >= deadline:
            return False
        if stop is not None and stop.is_set():
            return False
        sent += 1
        return True

    async def user(send: Send) -> None:
        while more():
            started = time.perf_counter()
            outcome = await send()
            if outcome.ok:
                latencies_ms.append((time.perf_counter() - started) * 1000)
                if outcome.server_ms is not None:
                    server_ms.append(outcome.server_ms)
            else:
                errors.append(outcome.failure or "failed")

    cpu_started, wall_started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(user(send) for send in users))
    wall_s, cpu_s = time.perf_counter() - wall_started, time.process_time() - cpu_started
    return Load(latencies_ms, server_ms, errors, wall_s, cpu_s)


def open_client(
    base_url: str, connections: int = 1, timeout_s: float = 120.0, verify: ssl.SSLContext | bool = True
) -> httpx.AsyncClient:
    """An AsyncClient with room for `connections` requests at once."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(base_url=base_url, limits=limits, timeout=timeout_s, verify=verify)


@asynccontextmanager
async def open_clients(base_url: str, count: int, timeout_s: float = 120.0) -> AsyncIterator[list[httpx.AsyncClient]]:
    """`count` clients of one connection each: one per user of a closed loop.

    Not one client with `count` connections: the work of httpx's pool grows with its size, and
    at 100 connections it cost ~15 ms of CPU per request, so the generator measured itself.
    """
    tls = ssl.create_default_context()  # shared: building one per client costs ~20 ms each
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(open_client(base_url, 1, timeout_s, tls)) for _ in range(count)]


async def warm_up(clients: list[httpx.AsyncClient], path: str) -> None:
    """One untimed round of requests (up to 10 at once), so connections, caches and pools are ready.

    A first answer that is not 2xx is a CommandError: measuring a route that only fails is pointless.
    """
    first = await clients[0].get(path)
    if not first.is_success:
        raise CommandError(
            f"GET {path} answered {describe_failure(first)}: check the path (the app's /docs lists its routes)"
        )
    await asyncio.gather(*(client.get(path) for client in clients[:WARM_UP_REQUESTS]))


def run_on(loop: str) -> Callable:
    """`asyncio.run`, or `uvloop.run` for loop="uvloop": what runs a load generator."""
    if loop == "uvloop":
        import uvloop  # the optional extra; stack.event_loop() has checked that it is installed

        return uvloop.run
    return asyncio.run
