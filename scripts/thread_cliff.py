"""Show the thread pool's cliff: `python -m scripts.thread_cliff [--thread-limit 40]`.

It starts the experiment app with THREAD_LIMIT=N on a free port and, level by level, keeps K
slow `def` requests in flight (each holds a pool thread for 1 s) while it times a `def` route that
does nothing, and /health. Predict first: what happens to the trivial route below N, at N, and at 2.5 x N?
"""

import asyncio
import json

from scripts.experiments.cliff import find_cliff, measure_cliff, render
from scripts.experiments.runner import served
from scripts.toolkit.cli import command_parser, run
from scripts.toolkit.commands.options import add_json, parse_levels, positive_int


def main(argv: list[str] | None = None) -> int:
    """Start the experiment app, measure every level, stop the app, print."""
    parser = command_parser(
        "python -m scripts.thread_cliff",
        __doc__,
        "Nothing needs to run beforehand. "
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
    add_json(parser)
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
