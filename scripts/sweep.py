"""Find where a route stops scaling: req/s and latency at rising concurrency, `python -m scripts.sweep PATH`.

It starts the experiment app (and, for an /upstream route, a simulator) on free ports, measures
and stops them; --url measures an app that already runs instead. Each level keeps C requests in
flight for a few seconds. The knee is the last level before more clients stop bringing more req/s
while p99 climbs: serve at 60-70% of its req/s. A level where this generator itself used a whole
core gets a warning and no figure, since it measured itself.
"""

import argparse
import asyncio
import json

import httpx

from scripts.experiments.runner import add_app_arguments, app_to_measure, check_app_arguments
from scripts.toolkit.cli import fmt_ms, parse_levels, positive_float, progress, route_path, run
from scripts.toolkit.health import check_api
from scripts.toolkit.load import closed_loop, getter, session, warm_up
from scripts.toolkit.quantiles import quantile

EXIT_CODES = (
    "Exit codes: 0 every request answered 2xx, 1 some failed, 2 the app cannot start or be reached, or bad arguments."
)
# Clients added past the knee bring less than this share of the req/s they would bring with room to spare.
KNEE_SHARE_OF_IDEAL = 0.25
P99_CLIMB = 1.2  # ... while p99 grows by more than 20%


async def sweep(url: str, path: str, levels: list[int], duration_s: float) -> list[dict]:
    """Measure every level in turn, on the same warmed-up connections; returns one row per level."""
    rows = []
    async with httpx.AsyncClient(base_url=url, timeout=10) as check_client, session(url, max(levels)) as opened:
        await check_api(check_client)
        await warm_up(opened, path)
        for concurrency in levels:
            progress(f"  {concurrency} in flight for {duration_s:g} s ...")
            load = await closed_loop([getter(opened, path)] * concurrency, duration_s=duration_s)
            row = {
                "concurrency": concurrency,
                "ok": len(load.latencies_ms),
                "errors": len(load.errors),
                "generator_cpu_share": load.cpu_share,
                "saturated": load.saturated,
                "rps": None,
                "p50": None,
                "p95": None,
                "p99": None,
            }
            if load.latencies_ms and not load.saturated:
                row.update(rps=load.rps, **{f"p{p}": quantile(load.latencies_ms, p / 100) for p in (50, 95, 99)})
            rows.append(row)
    return rows


def find_knee(rows: list[dict]) -> dict | None:
    """The last level before req/s stops rising meaningfully while p99 climbs; None if that never happens.

    "Meaningfully" is relative to the clients added: going from 8 to 24 in flight could triple the
    req/s of a server with room to spare, so a rise of less than a quarter of that is a stop.
    """
    measured = [row for row in rows if row["rps"]]
    for before, after in zip(measured, measured[1:], strict=False):
        ideal_gain = after["concurrency"] / before["concurrency"] - 1
        gain = after["rps"] / before["rps"] - 1
        if gain < KNEE_SHARE_OF_IDEAL * ideal_gain and after["p99"] > before["p99"] * P99_CLIMB:
            return before
    return None


def render(path: str, duration_s: float, rows: list[dict], knee: dict | None) -> str:
    """The table, then one line about the knee."""
    header = (
        f"{'in flight':>10} {'req/s':>9} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'errors':>7} {'generator CPU':>14}"
    )
    lines = [f"GET {path}, {duration_s:g} s per level", header]
    for row in rows:
        rps = "-" if row["rps"] is None else f"{row['rps']:.1f}"
        cpu = f"{row['generator_cpu_share']:.0%}" + (" saturated" if row["saturated"] else "")
        lines.append(
            f"{row['concurrency']:>10} {rps:>9} {fmt_ms(row['p50']):>9} {fmt_ms(row['p95']):>9} "
            f"{fmt_ms(row['p99']):>9} {row['errors']:>7} {cpu:>14}"
        )
    if knee is None:
        top = max((row["concurrency"] for row in rows if row["rps"]), default=0)
        lines.append(f"no knee up to {top} in flight: req/s rose at every measured level; try higher levels")
    else:
        lines.append(
            f"knee: {knee['concurrency']} in flight, {knee['rps']:.1f} req/s, p99 {fmt_ms(knee['p99'])} ms"
            f" (serve at about {0.6 * knee['rps']:.0f}-{0.7 * knee['rps']:.0f} req/s, 60-70% of it)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, sweep, print; exit code 1 if any request failed."""
    parser = argparse.ArgumentParser(
        prog="python -m scripts.sweep",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXIT_CODES,
    )
    parser.add_argument("path", type=route_path, help="the route to load, e.g. /sleep/def")
    parser.add_argument(
        "--concurrency",
        type=parse_levels,
        default=[1, 8, 24, 64],
        help="comma-separated levels of requests in flight (default 1,8,24,64)",
    )
    parser.add_argument("--duration", type=positive_float, default=5.0, help="seconds per level (default 5)")
    add_app_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    check_app_arguments(parser, args)
    levels = sorted(set(args.concurrency))

    with app_to_measure(args) as url:
        progress(f"sweeping GET {args.path} at {','.join(map(str, levels))} in flight ...")
        rows = asyncio.run(sweep(url, args.path, levels, args.duration))
    knee = find_knee(rows)
    if args.json:
        print(json.dumps({"url": url, "path": args.path, "duration_s": args.duration, "levels": rows, "knee": knee}))
    else:
        print(render(args.path, args.duration, rows, knee))
    for row in rows:
        if row["saturated"]:
            share = row["generator_cpu_share"]
            progress(
                f"warning: at {row['concurrency']} in flight this generator used {share:.0%}"
                " of a core, so it measured itself: no figure (run a second generator, or lower the level)"
            )
    return 1 if any(row["errors"] for row in rows) else 0


if __name__ == "__main__":
    run(main)
