"""The thread pool's cliff (scripts.thread_cliff): a trivial def route timed while K slow def requests hold threads."""

import asyncio
import time

import httpx

from scripts.stall import describe_failure, every, probe_health, times_ms
from scripts.toolkit.cli import CommandError, progress
from scripts.toolkit.load.closed_loop import Send, closed_loop, getter, session, warm_up
from scripts.toolkit.measure.quantiles import quantile
from scripts.toolkit.reports.text import fmt_ms

SLOW_PATH = "/sleep/def?ms={ms}"
TRIVIAL_PATH = "/noop/def"
PROBE_INTERVAL_S = 0.05
CLIFF_SHARE = 0.25  # a trivial request that waited a quarter of a slow one's time waited for a thread


async def measure_cliff(url: str, levels: list[int], hold_ms: int, samples: int) -> list[dict]:
    """For each level K: K slow def requests in flight, `samples` timings of the trivial def route and /health."""
    slow_path = SLOW_PATH.format(ms=hold_ms)
    rows = []
    async with (
        httpx.AsyncClient(base_url=url, timeout=120) as trivial_client,
        httpx.AsyncClient(base_url=url, timeout=120) as health_client,
        session(url, max(levels)) as slow,
    ):
        await warm_up(slow, SLOW_PATH.format(ms=1))
        await timed_get(trivial_client, TRIVIAL_PATH)
        for in_flight in levels:
            progress(f"  {in_flight} slow requests in flight ...")
            slow_users = [getter(slow, slow_path)] * in_flight
            rows.append(await measure_in_flight(slow_users, hold_ms, samples, trivial_client, health_client))
    return rows


async def measure_in_flight(
    slow_users: list[Send],
    hold_ms: int,
    samples: int,
    trivial_client: httpx.AsyncClient,
    health_client: httpx.AsyncClient,
) -> dict:
    """Keep one slow request per user in flight; time the trivial route `samples` times meanwhile."""
    stop_load, stop_probe = asyncio.Event(), asyncio.Event()
    load = asyncio.create_task(closed_loop(slow_users, stop=stop_load))
    # Let every slow request reach the API and take its thread before the first timing.
    await asyncio.sleep(min(0.3, hold_ms / 4000))
    prober = asyncio.create_task(probe_health(health_client, PROBE_INTERVAL_S, stop_probe))
    trivial_ms: list[float] = []

    async def time_trivial() -> bool:
        trivial_ms.append(await timed_get(trivial_client, TRIVIAL_PATH))
        return len(trivial_ms) == samples

    try:
        await every(PROBE_INTERVAL_S, stop_probe, time_trivial)
    finally:
        stop_probe.set()
        stop_load.set()
        health_ms = times_ms(await prober)
        slow = await load  # the slow requests must finish: their threads would still be busy at the next level
    return {
        "in_flight": len(slow_users),
        "trivial_p50_ms": quantile(trivial_ms, 0.5),
        "trivial_max_ms": max(trivial_ms),
        "health_p50_ms": quantile(health_ms, 0.5) if health_ms else None,
        "slow_p50_ms": quantile(slow.latencies_ms, 0.5) if slow.latencies_ms else None,
        "slow_errors": len(slow.errors),
    }


async def timed_get(client: httpx.AsyncClient, path: str) -> float:
    """Milliseconds for one GET; a failure is a CommandError."""
    started = time.perf_counter()
    try:
        response = await client.get(path)
    except httpx.HTTPError as exc:
        raise CommandError(f"GET {path} failed: {describe_failure(exc)}") from None
    if not response.is_success:
        raise CommandError(f"GET {path} answered {describe_failure(response)}")
    return (time.perf_counter() - started) * 1000


def find_cliff(rows: list[dict], hold_ms: int) -> int | None:
    """The first level at which the trivial route waited for a thread; None if it never did."""
    for row in rows:
        if row["trivial_p50_ms"] >= CLIFF_SHARE * hold_ms:
            return row["in_flight"]
    return None


def render(thread_limit: int, hold_ms: int, rows: list[dict], cliff: int | None) -> str:
    """The table, then one line about the cliff."""
    lines = [
        f"THREAD_LIMIT={thread_limit}; each slow request: GET {SLOW_PATH.format(ms=hold_ms)}",
        f"{'in flight':>10} {'trivial def p50':>16} {'max':>9} {'/health p50':>12} {'slow p50':>10}",
    ]
    for row in rows:
        lines.append(
            f"{row['in_flight']:>10} {fmt_ms(row['trivial_p50_ms']) + ' ms':>16}"
            f" {fmt_ms(row['trivial_max_ms']) + ' ms':>9} {fmt_ms(row['health_p50_ms']) + ' ms':>12}"
            f" {fmt_ms(row['slow_p50_ms']) + ' ms':>10}"
        )
    if cliff is None:
        lines.append(f"no cliff up to {rows[-1]['in_flight']} slow requests in flight: a thread was always free")
    else:
        lines.append(f"cliff at {cliff} slow requests in flight: from there {TRIVIAL_PATH} waits for a free thread")
    return "\n".join(lines)
