"""Measuring the API from outside: a closed-loop load, a /health prober and percentiles.

Plain functions over httpx.AsyncClient, shared by scripts.probe, scripts.sweep and
scripts.thread_cliff (and free for any other script). Every time is in milliseconds.
"""

import asyncio
import math
import ssl
import time
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import AsyncIterator

import httpx

from scripts.cli import CommandError

SATURATED_CPU_SHARE = 0.9  # a generator that used 90% of a core was busy itself: its figures are its own limit
WARM_UP_REQUESTS = 10


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (0-100) of the values, interpolated between the two nearest; ValueError if empty."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(values_ms: list[float]) -> dict:
    """count, p50, p95, p99, max and mean of the samples; each figure is None when there are none."""
    if not values_ms:
        return {"count": 0, "p50": None, "p95": None, "p99": None, "max": None, "mean": None}
    return {
        "count": len(values_ms),
        "p50": percentile(values_ms, 50),
        "p95": percentile(values_ms, 95),
        "p99": percentile(values_ms, 99),
        "max": max(values_ms),
        "mean": sum(values_ms) / len(values_ms),
    }


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


def open_client(base_url: str, connections: int = 1, timeout_s: float = 120.0,
                verify: ssl.SSLContext | bool = True) -> httpx.AsyncClient:
    """An AsyncClient with room for `connections` requests at once."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(base_url=base_url, limits=limits, timeout=timeout_s, verify=verify)


@asynccontextmanager
async def open_clients(base_url: str, count: int, timeout_s: float = 120.0) -> AsyncIterator[list[httpx.AsyncClient]]:
    """`count` clients of one connection each: one per worker of a closed loop.

    Not one client with `count` connections: the work of httpx's pool grows with its size, and
    at 100 connections it cost ~15 ms of CPU per request, so the generator measured itself.
    """
    tls = ssl.create_default_context()  # shared: building one per client costs ~20 ms each
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(open_client(base_url, 1, timeout_s, tls)) for _ in range(count)]


async def closed_loop(
    clients: list[httpx.AsyncClient],
    path: str,
    *,
    requests: int | None = None,
    duration_s: float | None = None,
    stop: asyncio.Event | None = None,
) -> Load:
    """One worker per client, each sending GET `path` as soon as its last answer came, until `requests`
    are sent, `duration_s` is over or `stop` is set (whichever comes first)."""
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

    async def worker(client: httpx.AsyncClient) -> None:
        while more():
            started = time.perf_counter()
            try:
                response = await client.get(path)
            except httpx.HTTPError as exc:
                errors.append(describe_failure(exc))
                continue
            if response.is_success:
                latencies_ms.append((time.perf_counter() - started) * 1000)
                reported = server_total_ms(response)
                if reported is not None:
                    server_ms.append(reported)
            else:
                errors.append(describe_failure(response))

    cpu_started, wall_started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(client) for client in clients))
    wall_s, cpu_s = time.perf_counter() - wall_started, time.process_time() - cpu_started
    return Load(latencies_ms, server_ms, errors, wall_s, cpu_s)


async def probe_health(
    client: httpx.AsyncClient,
    interval_s: float,
    stop: asyncio.Event,
    path: str = "/health",
    errors: list[str] | None = None,
) -> list[float]:
    """GET `path` until `stop` is set, waiting `interval_s` after each answer; returns the answers' times.

    A probe that fails is not a sample; its reason goes to `errors` when a list is given. Use a
    client of its own, so that the probe never waits for a connection of the load's pool.
    """
    samples_ms: list[float] = []
    while not stop.is_set():
        started = time.perf_counter()
        try:
            response = await client.get(path)
        except httpx.HTTPError as exc:
            if errors is not None:
                errors.append(describe_failure(exc))
        else:
            if response.is_success:
                samples_ms.append((time.perf_counter() - started) * 1000)
            elif errors is not None:
                errors.append(describe_failure(response))
        try:
            await asyncio.wait_for(stop.wait(), interval_s)
        except TimeoutError:
            pass
    return samples_ms


async def check_api(client: httpx.AsyncClient) -> None:
    """CommandError (exit code 2) unless the API at the client's base URL answers GET /health."""
    try:
        response = await client.get("/health", timeout=5)
    except httpx.HTTPError as exc:
        raise CommandError(
            f"cannot reach the API at {client.base_url} ({type(exc).__name__}): start it (fastapi dev) or pass --url"
        ) from None
    if not response.is_success:
        raise CommandError(f"GET {client.base_url}health answered {response.status_code}: is this the ticket API?")


async def warm_up(clients: list[httpx.AsyncClient], path: str) -> None:
    """One untimed round of requests (up to 10 at once), so connections, caches and pools are ready.

    A first answer that is not 2xx is a CommandError: measuring a route that only fails is pointless.
    """
    first = await clients[0].get(path)
    if not first.is_success:
        raise CommandError(f"GET {path} answered {describe_failure(first)}: check the path (and LAB_ROUTES=true)")
    await asyncio.gather(*(client.get(path) for client in clients[:WARM_UP_REQUESTS]))


def server_timing(answer: httpx.Response | str) -> dict[str, float]:
    """The API's Server-Timing (`db;dur=9.5, ai;dur=2130.2, ...`) as {"db": 9.5, "ai": 2130.2, ...}."""
    value = answer if isinstance(answer, str) else answer.headers.get("server-timing", "")
    parts = (part.strip().partition(";dur=") for part in value.split(","))
    return {name: float(duration) for name, _, duration in parts if duration}


def provider_calls(answer: httpx.Response | str) -> list[tuple[float, float]]:
    """The API's X-Provider-Calls (`3.1-913.5, 915.0-2016.2`) as [(3.1, 913.5), (915.0, 2016.2)], in ms."""
    value = answer if isinstance(answer, str) else answer.headers.get("x-provider-calls", "")
    spans = (span.partition("-") for span in value.split(",") if span.strip())
    return [(float(start), float(end)) for start, _, end in spans]


def server_total_ms(response: httpx.Response) -> float | None:
    """The `total` of the answer's Server-Timing header (the API's own time for it), or None."""
    return server_timing(response).get("total")


def error_code(response) -> str | None:
    """The API's error code (`ai_busy`, ...) of an answer that is not 2xx, else None."""
    if 200 <= response.status_code < 300:
        return None
    try:
        return response.json().get("error") or f"http_{response.status_code}"
    except (ValueError, AttributeError):
        return f"http_{response.status_code}"


def describe_failure(failure: httpx.Response | Exception) -> str:
    """A short reason: `503 ai_busy` for an error answer, the exception's name for a transport error."""
    if isinstance(failure, Exception):
        return type(failure).__name__
    code = error_code(failure) or ""
    return f"{failure.status_code} {code.removeprefix(f'http_{failure.status_code}')}".strip()


def fmt_ms(value: float | None) -> str:
    """Milliseconds for a table: `12.3`, `1,955` past a thousand, `-` when there is no figure."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"
