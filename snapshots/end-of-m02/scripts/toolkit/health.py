"""The one /health prober: how long GET /health takes while something else loads the API.

/health does no work, so its time is the time the API's event loop needed to get to it.
"""

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

import httpx

from scripts.toolkit.answers import describe_failure
from scripts.toolkit.cli import CommandError


@dataclass
class HealthProbes:
    """What probe_health has seen so far, readable while it runs (the watch page reads it live)."""

    since: float  # time.perf_counter() that start_s counts from
    answers: list[dict] = field(default_factory=list)  # {"start_s": ..., "ms": ...}, one per 2xx
    errors: list[str] = field(default_factory=list)
    sent_at: float | None = None  # perf_counter() of the GET waiting for its answer, if one is
    refused: bool = False  # the last GET got no answer at all: the API is down


async def probe_health(
    client: httpx.AsyncClient,
    interval_s: float,
    stop: asyncio.Event,
    since: float | None = None,
    errors: list[str] | None = None,
    path: str = "/health",
    seen: HealthProbes | None = None,
) -> list[dict]:
    """GET `path` at once, then `interval_s` after each answer, until `stop` is set; each answer's start (s since
    `since`) and ms.

    A probe still on its way when `stop` is set is waited for and counts: its wait is part of what
    was measured. A probe that fails is not a sample; its reason goes to `errors` when a list is
    given. Use a client of its own, so that a probe never waits for a connection of the load's pool.
    """
    seen = seen or HealthProbes(time.perf_counter() if since is None else since)
    seen.errors = seen.errors if errors is None else errors
    while not stop.is_set():
        seen.sent_at = sent = time.perf_counter()
        try:
            response = await client.get(path)
        except httpx.HTTPError as exc:
            seen.errors.append(describe_failure(exc))
            seen.refused = True
        else:
            seen.refused = False
            if response.is_success:
                seen.answers.append({"start_s": sent - seen.since, "ms": (time.perf_counter() - sent) * 1000})
            else:
                seen.errors.append(describe_failure(response))
        finally:
            seen.sent_at = None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
    return seen.answers


def times_ms(probes: list[dict]) -> list[float]:
    """The probes' times in milliseconds."""
    return [probe["ms"] for probe in probes]


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


def is_healthy(url: str, timeout_s: float = 1) -> bool:
    """True when GET `url`/health answers 200 now (a service's readiness, from synchronous code)."""
    try:
        return httpx.get(f"{url}/health", timeout=timeout_s).status_code == 200
    except httpx.TransportError:
        return False
