"""The one closed load loop of the tools: each user sends its next request as soon as its last one answered.

A user is a request factory: an async function that sends one request and says how it went
(`Outcome`). `getter()` and `sender()` make them on an aiohttp session (`session()`), the client
every command that makes load uses as it comes; a command may write its own (the soak's retries).
The loop keeps each call's start, end and outcome, and counts this process's CPU, so a generator
that was its own limit shows (`Load.saturated`). Times of calls are `time.perf_counter()` seconds;
figures are in milliseconds.
"""

import asyncio
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from scripts.stall import describe_failure, server_timing
from scripts.toolkit.answers import Answer
from scripts.toolkit.cli import CommandError
from scripts.toolkit.measure.cpu import own_cpu_s

# A generator that used 90% of a core was busy itself: its figures are its own limit (Locust warns there too).
SATURATED_CPU_SHARE = 0.9
WARM_UP_REQUESTS = 10  # warm_up's round, sent at once
JSON = {"Content-Type": "application/json"}


@dataclass
class Reply:
    """An answer read whole, with the names answers.py reads (as httpx's): status_code, headers, json()."""

    status_code: int
    headers: Mapping[str, str]
    content: bytes

    def json(self) -> Any:
        """The body as JSON; ValueError if it is not."""
        return orjson.loads(self.content)


NO_ANSWER = (aiohttp.ClientError, TimeoutError)  # what a request raises without an answer: refused, reset, timed out


async def fetch(session: aiohttp.ClientSession, method: str, path: str, **options: Any) -> Reply:
    """One request, its answer read whole; raises one of NO_ANSWER when there is none."""
    async with session.request(method, path, **options) as response:
        return Reply(response.status, response.headers, await response.read())


@dataclass
class Outcome:
    """How one request went: answered with success or not, why not, and the server's own time for it (ms)."""

    ok: bool
    failure: str | None = None
    server_ms: float | None = None


def server_total_ms(response: Answer) -> float | None:
    """The `total` of the answer's Server-Timing header (the API's own time for it), or None."""
    return server_timing(response).get("total")


def outcome_of(answer: Answer | Exception, server_ms: Callable[[Answer], float | None] = server_total_ms) -> Outcome:
    """The Outcome of an answer, httpx's or ours (2xx: success; `server_ms` reads the server's time), or a failure's."""
    if not isinstance(answer, Exception) and 200 <= answer.status_code < 300:
        return Outcome(True, server_ms=server_ms(answer))
    return Outcome(False, describe_failure(answer))


Send = Callable[[], Awaitable[Outcome]]


def getter(session: aiohttp.ClientSession, path: str) -> Send:
    """A request factory: GET `path`."""
    return sender(session, [("GET", path, None)])


def sender(
    session: aiohttp.ClientSession,
    requests: Sequence[tuple[str, str, bytes | None]],
    first: int = 0,
    server_ms: Callable[[Answer], float | None] = server_total_ms,
) -> Send:
    """A request factory: the (method, path, JSON body) of `requests` in turn, from the `first`-th, round and round."""
    turn = first

    async def send() -> Outcome:
        nonlocal turn
        method, path, body = requests[turn % len(requests)]
        turn += 1
        try:
            return outcome_of(await fetch(session, method, path, data=body, headers=JSON if body else None), server_ms)
        except NO_ANSWER as exc:
            return outcome_of(exc)

    return send


@dataclass
class Call:
    """One request of the loop: when it was sent and answered (perf_counter seconds), and how it went."""

    start: float
    end: float
    outcome: Outcome

    @property
    def ms(self) -> float:
        """How long it took."""
        return (self.end - self.start) * 1000


@dataclass
class Load:
    """What one closed-loop load measured: every call, the wall and CPU seconds (from `began`, perf_counter)."""

    calls: list[Call]
    began: float
    wall_s: float
    cpu_s: float
    given_up: int = 0  # calls still unanswered when the loop gave up on them
    ok: list[Call] = field(init=False)

    def __post_init__(self) -> None:
        self.ok = [call for call in self.calls if call.outcome.ok]

    @property
    def latencies_ms(self) -> list[float]:
        """The times of the successful calls."""
        return [call.ms for call in self.ok]

    @property
    def server_ms(self) -> list[float]:
        """The server's own times of the successful calls that said it (Server-Timing's total, by default)."""
        return [call.outcome.server_ms for call in self.ok if call.outcome.server_ms is not None]

    @property
    def errors(self) -> list[str]:
        """Why each failed call failed."""
        return [call.outcome.failure or "failed" for call in self.calls if not call.outcome.ok]

    @property
    def rps(self) -> float:
        """Successful requests per second of wall time."""
        return len(self.ok) / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_share(self) -> float:
        """This process's CPU time over the wall time (1.0 = one core busy all along)."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def saturated(self) -> bool:
        """This process used about one whole core: the load generator, not the server, set the pace."""
        return self.cpu_share >= SATURATED_CPU_SHARE

    def ended_within(self, start: float, end: float) -> list[Call]:
        """The calls answered between two perf_counter times, whenever they were sent."""
        return [call for call in self.calls if start <= call.end <= end]


async def closed_loop(
    users: list[Send],
    *,
    requests: int | None = None,
    duration_s: float | None = None,
    stop: asyncio.Event | None = None,
    ramp_s: float = 0.0,
    give_up_s: float | None = None,
) -> Load:
    """Every user sends its next request as soon as its last one answered, until `requests` are sent,
    `duration_s` after the ramp is over or `stop` is set (whichever comes first).

    The users' first requests start spread evenly over `ramp_s`. With `give_up_s`, calls still
    unanswered that long after the end are given up (cancelled), so that a stuck server ends the run.
    """
    if requests is None and duration_s is None and stop is None:
        raise ValueError("give requests, duration_s or stop: the load would never end")
    calls: list[Call] = []
    sent = 0
    began, cpu_began = time.perf_counter(), own_cpu_s()
    deadline = began + ramp_s + duration_s if duration_s is not None else math.inf

    def more() -> bool:
        nonlocal sent
        if (requests is not None and sent >= requests) or time.perf_counter() >= deadline:
            return False
        if stop is not None and stop.is_set():
            return False
        sent += 1
        return True

    async def user(number: int, send: Send) -> None:
        await asyncio.sleep(ramp_s * number / len(users))
        while more():
            start = time.perf_counter()
            outcome = await send()
            calls.append(Call(start, time.perf_counter(), outcome))

    tasks = [asyncio.create_task(user(number, send)) for number, send in enumerate(users)]
    if give_up_s is None or deadline == math.inf:
        await asyncio.gather(*tasks)
        pending: set[asyncio.Task] = set()
    else:
        _, pending = await asyncio.wait(tasks, timeout=deadline + give_up_s - time.perf_counter())
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    wall_s, cpu_s = time.perf_counter() - began, own_cpu_s() - cpu_began
    return Load(calls, began, wall_s, cpu_s, len(pending))


@asynccontextmanager
async def session(
    base_url: str, connections: int, timeout_s: float = 120.0, headers: dict[str, str] | None = None
) -> AsyncIterator[aiohttp.ClientSession]:
    """An aiohttp session with room for `connections` requests at once, each kept alive; `headers` go with each.

    One pool for every user: aiohttp's does the same small work whatever its size (httpx's own
    pool cost ~15 ms of CPU per request at 100 connections, so the generator measured itself).
    """
    connector = aiohttp.TCPConnector(limit=connections)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(base_url, connector=connector, timeout=timeout, headers=headers) as opened:
        yield opened


async def warm_up(opened: aiohttp.ClientSession, path: str) -> None:
    """One untimed round of WARM_UP_REQUESTS requests, all at once, so connections, caches and pools are ready.

    A first answer that is not 2xx is a CommandError: measuring a route that only fails is pointless.
    """
    first = await getter(opened, path)()
    if not first.ok:
        raise CommandError(f"GET {path} answered {first.failure}: check the path (the app's /docs lists its routes)")
    await asyncio.gather(*(fetch(opened, "GET", path) for _ in range(WARM_UP_REQUESTS)))


def run_on(loop: str) -> Callable:
    """`asyncio.run`, or `uvloop.run` for loop="uvloop": what runs a load generator."""
    if loop == "uvloop":
        import uvloop  # the optional extra; commands.options.event_loop() has checked that it is installed

        return uvloop.run
    return asyncio.run
