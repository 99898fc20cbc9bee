"""Show the thread pool's cliff: `python -m scripts.thread_cliff [--thread-limit 40]`.

It starts the experiment app with THREAD_LIMIT=N on a free port and, level by level, keeps K
slow `def` requests in flight (each holds a pool thread for 1 s) while it times a `def` route that
does nothing, and /health. Predict first: what happens to the trivial route below N, at N, and at 2.5 x N?
"""

import argparse
import asyncio
import json
import time

import httpx

from scripts.experiments.runner import served
from scripts.toolkit.answers import describe_failure
from scripts.toolkit.cli import CommandError, fmt_ms, parse_levels, positive_int, progress, run
from scripts.toolkit.health import probe_health, times_ms
from scripts.toolkit.load import Send, closed_loop, getter, session, warm_up
from scripts.toolkit.quantiles import quantile

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
            rows.append(await measure_level(slow_users, hold_ms, samples, trivial_client, health_client))
    return rows


async def measure_level(
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
    trivial_ms = []
    try:
        for _ in range(samples):
            trivial_ms.append(await timed_get(trivial_client, TRIVIAL_PATH))
            await asyncio.sleep(PROBE_INTERVAL_S)
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


def main(argv: list[str] | None = None) -> int:
    """Start the experiment app, measure every level, stop the app, print."""
    parser = argparse.ArgumentParser(
        prog="python -m scripts.thread_cliff",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Nothing needs to run beforehand. "
        "Exit codes: 0 done, 1 some slow requests failed, 2 the app cannot start or bad arguments.",
    )
    parser.add_argument(
        "--thread-limit",
        type=positive_int,
        default=40,
        help="THREAD_LIMIT of the app it starts (default 40, AnyIO's default)",
    )
    parser.add_argument(
        "--levels",
        type=parse_levels,
        default=[20, 39, 40, 60, 100],
        help="slow requests in flight, one level after another (default 20,39,40,60,100)",
    )
    parser.add_argument(
        "--hold-ms",
        type=positive_int,
        default=1000,
        help="how long each slow request waits, at most 10000 (default 1000)",
    )
    parser.add_argument(
        "--samples", type=positive_int, default=7, help="timings of the trivial route per level (default 7)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    if args.hold_ms > 10_000:
        parser.error("--hold-ms: at most 10000")

    with served(args.thread_limit) as url:
        rows = asyncio.run(measure_cliff(url, sorted(set(args.levels)), args.hold_ms, args.samples))
    cliff = find_cliff(rows, args.hold_ms)
    if args.json:
        figures = {"thread_limit": args.thread_limit, "hold_ms": args.hold_ms, "levels": rows, "cliff_at": cliff}
        print(json.dumps(figures))
    else:
        print(render(args.thread_limit, args.hold_ms, rows, cliff))
    return 1 if any(row["slow_errors"] for row in rows) else 0


if __name__ == "__main__":
    run(main)
