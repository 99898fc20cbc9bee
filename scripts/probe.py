"""Send N requests to one route, C at a time, while GET /health is asked every 50 ms: `python -m scripts.probe PATH`.

It starts the experiment app (and, for an /upstream route, a simulator) on free ports, measures
and stops them; --url measures an app that already runs instead. It prints the route's throughput
and latency, and how long /health took meanwhile: a /health that needs hundreds of milliseconds
means that the route holds the event loop.
"""

import asyncio
import json
from collections import Counter

import httpx

from scripts.experiments.runner import app_to_measure, parse_route_arguments, route_parser
from scripts.stall import check_api, probe_health, times_ms
from scripts.toolkit.cli import progress, run
from scripts.toolkit.commands.options import positive_float, positive_int
from scripts.toolkit.load.closed_loop import closed_loop, getter, session, warm_up
from scripts.toolkit.measure.quantiles import percentiles
from scripts.toolkit.reports.text import fmt_ms


async def probe_route(url: str, path: str, concurrency: int, requests: int, interval_s: float) -> dict:
    """Warm the route up, then load it and probe /health at the same time; returns the figures."""
    async with httpx.AsyncClient(base_url=url, timeout=120) as probe_client, session(url, concurrency) as opened:
        await check_api(probe_client)
        await warm_up(opened, path)
        stop = asyncio.Event()
        prober = asyncio.create_task(probe_health(probe_client, interval_s, stop))
        try:
            load = await closed_loop([getter(opened, path)] * concurrency, requests=requests)
        finally:
            stop.set()
            health_ms = times_ms(await prober)
    return {
        "url": url,
        "path": path,
        "concurrency": concurrency,
        "requests": requests,
        "wall_s": load.wall_s,
        "ok": len(load.latencies_ms),
        "errors": len(load.errors),
        "error_kinds": dict(Counter(load.errors).most_common(3)),
        "rps": load.rps,
        "latency_ms": percentiles(load.latencies_ms),
        "server_ms": percentiles(load.server_ms),
        "health_interval_s": interval_s,
        "health_ms": percentiles(health_ms),
        "generator_cpu_share": load.cpu_share,
        "generator_saturated": load.saturated,
    }


def render(result: dict) -> str:
    """The figures as three lines of text."""
    latency, server, health = result["latency_ms"], result["server_ms"], result["health_ms"]
    errors = str(result["errors"])
    if result["error_kinds"]:
        errors += " (" + ", ".join(f"{kind} x{count}" for kind, count in result["error_kinds"].items()) + ")"
    return "\n".join(
        [
            f"GET {result['path']}: {result['requests']} requests, {result['concurrency']} at a time",
            f"  wall {result['wall_s']:.2f} s   ok {result['ok']}   errors {errors}   {result['rps']:.1f} req/s"
            f"   p50 {fmt_ms(latency['p50'])} ms   p99 {fmt_ms(latency['p99'])} ms"
            + (f"   (in the API: p50 {fmt_ms(server['p50'])} ms)" if server["count"] else ""),
            f"GET /health every {result['health_interval_s'] * 1000:.0f} ms meanwhile: {health['count']} samples"
            f"   p50 {fmt_ms(health['p50'])} ms   p95 {fmt_ms(health['p95'])} ms   max {fmt_ms(health['max'])} ms",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, measure, print; exit code 1 if any request failed."""
    parser = route_parser("python -m scripts.probe", __doc__, "/sleep/async-blocking")
    parser.add_argument("--concurrency", type=positive_int, default=10, help="requests in flight at once (default 10)")
    parser.add_argument("--requests", type=positive_int, default=100, help="requests in all (default 100)")
    parser.add_argument(
        "--interval", type=positive_float, default=0.05, help="seconds between two /health probes (default 0.05)"
    )
    args = parse_route_arguments(parser, argv)

    with app_to_measure(args) as url:
        progress(f"probing GET {args.path}: {args.requests} requests, {args.concurrency} at a time ...")
        result = asyncio.run(probe_route(url, args.path, args.concurrency, args.requests, args.interval))
    print(json.dumps(result) if args.json else render(result))
    if result["generator_saturated"]:
        progress(
            f"warning: this generator used {result['generator_cpu_share']:.0%} of a core: "
            "it may be the limit, not the API (try a lower --concurrency)"
        )
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    run(main)
