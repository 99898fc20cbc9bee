"""Find where a route stops scaling: req/s and latency at rising concurrency, `python -m scripts.sweep PATH`.

It starts the experiment app (and, for an /upstream route, a simulator) on free ports, measures
and stops them; --url measures an app that already runs instead. Each level keeps C requests in
flight for a few seconds. The knee is the last level before more clients stop bringing more req/s
while p99 climbs: serve at 60-70% of its req/s. A level where this generator itself used a whole
core gets a warning and no figure, since it measured itself.
"""

import asyncio
import json

from scripts.experiments.knee import find_knee, render, sweep
from scripts.experiments.runner import app_to_measure, parse_route_arguments, route_parser
from scripts.toolkit.cli import progress, run
from scripts.toolkit.commands.options import add_duration, parse_levels


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, sweep, print; exit code 1 if any request failed."""
    parser = route_parser("python -m scripts.sweep", __doc__, "/sleep/def")
    parser.add_argument(
        "--concurrency",
        type=parse_levels,
        default=[1, 8, 24, 64],
        help="comma-separated levels of requests in flight (default 1,8,24,64)",
    )
    add_duration(parser, 5.0, "per level")
    args = parse_route_arguments(parser, argv)
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
