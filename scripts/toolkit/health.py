"""The one /health prober: how long GET /health takes while something else loads the API.

/health does no work, so its time is the time the API's event loop needed to get to it.
"""

import asyncio
import time

import httpx

from scripts.toolkit.answers import describe_failure
from scripts.toolkit.cli import CommandError


async def probe_health(
    client: httpx.AsyncClient,
    interval_s: float,
    stop: asyncio.Event,
    since: float | None = None,
    errors: list[str] | None = None,
    path: str = "/health",
) -> list[dict]:
    """GET `path` at once, then `interval_s` after each answer, until `stop` is set; each answer's start (s) and ms.

    A probe still on its way when `stop` is set is waited for and counts: its wait is part of what
    was measured. A probe that fails is not a sample; its reason goes to `errors` when a list is
    given. Use a client of its own, so that a probe never waits for a connection of the load's pool.
    """
    since = time.perf_counter() if since is None else since
    probes: list[dict] = []
    while True:
        start_s = time.perf_counter() - since
        try:
            response = await client.get(path)
        except httpx.HTTPError as exc:
            if errors is not None:
                errors.append(describe_failure(exc))
        else:
            if response.is_success:
                probes.append({"start_s": start_s, "ms": (time.perf_counter() - since - start_s) * 1000})
            elif errors is not None:
                errors.append(describe_failure(response))
        try:
            await asyncio.wait_for(stop.wait(), interval_s)
            return probes
        except TimeoutError:
            pass


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
