"""Send 32 tickets at once and watch what the API holds meanwhile: `python -m scripts.burst`.

It reads GET /metrics every 50 ms while the tickets are in flight: DB connections in use,
requests waiting for one, provider calls in flight. Module 1's design (INTAKE_MODE=thread)
holds a connection through each ticket's AI wait; async intake borrows one only to check
and to save.
"""

import asyncio
import json
import random
import statistics
import time

import httpx

from scripts.stall import DEFAULT_URL, check_api, every, positive_float, positive_int
from scripts.toolkit.cli import command_parser, progress, run
from scripts.toolkit.dataset import random_ticket
from scripts.toolkit.metrics import read_metrics

FIGURES = {
    "db_in_use": "ticket_api_db_pool_in_use",
    "db_pool_max": "ticket_api_db_pool_max",
    "db_waiting": "ticket_api_db_pool_waiting",
    "db_wait_s": "ticket_api_db_pool_wait_seconds_total",
    "provider_in_flight": "ticket_api_provider_in_flight",
}


def watched_figures(text: str) -> dict[str, float]:
    """The figures burst watches, from /metrics in Prometheus text format."""
    values = read_metrics(text).totals()
    return {name: float(values.get(metric, 0)) for name, metric in FIGURES.items()}


async def burst(url: str, tickets: int, interval: float, seed: int) -> dict:
    """Send `tickets` tickets at the same moment, sampling /metrics until all have answered."""
    rng = random.Random(seed)
    limits = httpx.Limits(max_connections=tickets + 2)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        await check_api(client)
        before = watched_figures((await client.get("/metrics")).text)
        samples: list[dict[str, float]] = []
        done = asyncio.Event()

        async def sample() -> None:
            try:
                samples.append(watched_figures((await client.get("/metrics")).text))
            except httpx.HTTPError:
                pass  # a missed sample; the tickets' answers tell the rest

        async def create(ticket: dict) -> tuple[int | None, float]:
            started = time.perf_counter()
            try:
                status = (await client.post("/v1/tickets", json=ticket)).status_code
            except httpx.HTTPError:
                status = None  # no answer at all
            return status, (time.perf_counter() - started) * 1000

        progress(f"{tickets} tickets at once to {url} ...")
        watcher = asyncio.create_task(every(interval, done, sample))
        started = time.perf_counter()
        try:
            results = await asyncio.gather(*(create(random_ticket(rng)) for _ in range(tickets)))
        finally:
            done.set()
            await watcher
        total_s = time.perf_counter() - started
        after = watched_figures((await client.get("/metrics")).text)
    return burst_figures(results, samples, before, after, total_s)


def burst_figures(
    results: list[tuple[int | None, float]], samples: list[dict], before: dict, after: dict, total_s: float
) -> dict:
    """Every figure of the run, for the printout and for --json."""
    statuses = [status for status, _ in results if status is not None]
    times = sorted(ms for _, ms in results)
    samples = samples or [after]
    return {
        "tickets": len(results),
        "total_s": round(total_s, 2),
        "statuses": sorted(set(statuses)),
        "status_counts": {str(code): statuses.count(code) for code in sorted(set(statuses))},
        "unanswered": len(results) - len(statuses),
        "p50_ms": round(statistics.median(times), 1),
        # The last of the 19 cuts into 20 equal parts is the 95th percentile (inclusive: between the samples).
        "p95_ms": round(statistics.quantiles(times, n=20, method="inclusive")[-1] if len(times) > 1 else times[0], 1),
        "db_pool_max": int(after["db_pool_max"]),
        "db_in_use_median": statistics.median(s["db_in_use"] for s in samples),
        "db_in_use_max": max(s["db_in_use"] for s in samples),
        "db_waiting_max": max(s["db_waiting"] for s in samples),
        "db_wait_s": round(after["db_wait_s"] - before["db_wait_s"], 2),
        "provider_in_flight_max": max(s["provider_in_flight"] for s in samples),
    }


def render(figures: dict) -> str:
    """Three lines for people."""
    counts = ", ".join(f"{code}: {n}" for code, n in figures["status_counts"].items())
    if figures["unanswered"]:
        counts += f", no answer: {figures['unanswered']}"
    return "\n".join(
        [
            f"{figures['tickets']} tickets at once: {figures['total_s']:.1f} s, status counts {{{counts}}}, "
            f"p50 {figures['p50_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms",
            f"DB connections in use: median {figures['db_in_use_median']:g}, max {figures['db_in_use_max']:g} "
            f"of {figures['db_pool_max']}; time waited for one: {figures['db_wait_s']:.1f} s in all",
            f"provider calls in flight: at most {figures['provider_in_flight_max']:g}",
        ]
    )


def main() -> int:
    """Parse the command line, run the burst, print the figures."""
    parser = command_parser(
        "python -m scripts.burst",
        __doc__,
        "Exit codes: 0 every ticket got 201, 1 some did not, 2 the API cannot be reached or bad arguments.",
    )
    parser.add_argument("--url", default=DEFAULT_URL, help="the API (default %(default)s)")
    parser.add_argument("--tickets", type=positive_int, default=32, help="tickets sent at once (default %(default)s)")
    parser.add_argument(
        "--interval", type=positive_float, default=0.05, help="seconds between /metrics samples (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for the random customers")
    parser.add_argument("--json", action="store_true", help="print every figure as one JSON object")
    args = parser.parse_args()
    figures = asyncio.run(burst(args.url.rstrip("/"), args.tickets, args.interval, args.seed))
    print(json.dumps(figures) if args.json else render(figures))
    return 0 if figures["statuses"] == [201] and not figures["unanswered"] else 1


if __name__ == "__main__":
    run(main)
