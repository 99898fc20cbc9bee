"""The course's comparison from nothing running: `python -m scripts.compare`.

It starts the database, then a simulator (quota off) and the API for each INTAKE_MODE in turn (on
asyncio's event loop, or on each loop of --loop), runs scripts.stall against each, prints the table
beside the course's figures, and writes the figures (JSON, CSV), the chart of /health medians,
one timeline per mode and loop and one chart of what the server held meanwhile (threads, DB
connections, provider calls, the loop's lag: toolkit.measure.held_series's recording) to an output folder.
"""

import argparse
import asyncio
import json

from scripts.stall import measure_stall
from scripts.toolkit.cli import command_parser, progress, run
from scripts.toolkit.commands.options import (
    Clock,
    add_json,
    add_loop,
    add_no_held,
    add_out,
    add_passes,
    add_speed,
    output_folder,
    positive_float,
)
from scripts.toolkit.measure.held_series import recorded_in_thread
from scripts.toolkit.reports import charts
from scripts.toolkit.reports.compare_table import median_rows, render, write_files
from scripts.toolkit.reports.held_chart import describe_peaks
from scripts.toolkit.reports.text import readable_ms
from scripts.toolkit.running.stack import EXIT_CODES, Stack, add_modes_argument, run_name, running_stack


def stall_runs(stack: Stack, args: argparse.Namespace, clock: Clock) -> dict:
    """Every pass of scripts.stall against the API in each mode, on each loop: {run_name: [result, ...]}.

    With args.held, each pass also records what the server held meanwhile (its result's "held").
    """
    runs: dict[str, list[dict]] = {}
    interval_s = args.interval or 0.1 * args.speed
    for mode in args.modes:
        for loop in args.loop:
            name = run_name(mode, loop)
            with stack.api(mode, loop=loop) as api:
                runs[name] = []
                for number in range(1, args.passes + 1):
                    label = f"{name}, pass {number}/{args.passes}"
                    progress(f"[{clock}] {label}: 8 tickets, 4 at a time ...")
                    seed = None if args.seed is None else args.seed + number
                    with recorded_in_thread(api.url, stack.simulator.url, args.speed, args.held) as held:
                        result = asyncio.run(measure_stall(api.url, interval_s=interval_s, seed=seed))
                    runs[name].append(
                        {"mode": mode, "loop": loop, "pass": number, "simulator_url": stack.simulator.url, **result}
                        | ({"held": held} if held else {})
                    )
                    progress(
                        f"[{clock}] {label}: {result['total_s']:.1f} s, /health: {result['health_answers']} answers, "
                        f"median {readable_ms(result['health_median_ms'])}, "
                        f"slowest {readable_ms(result['health_slowest_ms'])}"
                    )
                    if held:
                        progress(f"[{clock}] {label}: {describe_peaks(held['peaks'])}")
    return runs


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the comparison, print and write it; exit code 1 if a ticket failed."""
    parser = command_parser("python -m scripts.compare", __doc__.splitlines()[0], EXIT_CODES)
    add_modes_argument(parser, ["blocking", "async", "thread"])
    add_loop(parser, several=True)
    add_passes(parser, 1, "per mode; the table shows medians")
    add_speed(parser, 1.0, ": 0.05 for a quick check, 1 as in the course")
    parser.add_argument(
        "--interval",
        type=positive_float,
        help="seconds between /health probes (default 0.1 x speed, so the answers stay comparable)",
    )
    parser.add_argument("--seed", type=int, help="seed for the tickets' customers and texts (default: random)")
    add_out(parser, "compare")
    add_json(parser, "the rows")
    add_no_held(parser, "pass", "held-MODE.svg")
    args = parser.parse_args(argv)

    draw = charts.can_draw("charts")
    folder = output_folder(args.out, "compare")
    clock = Clock()
    with running_stack(args.speed, folder / "logs", clock) as stack:
        runs = stall_runs(stack, args, clock)
    rows = median_rows(runs)
    written = write_files(folder, rows, runs, args.speed, draw)
    if args.json:
        print(json.dumps({"rows": rows, "files": written}))
    else:
        print(render(rows, args.passes, args.speed))
    progress(f"[{clock}] wrote {len(written)} files to {folder}")
    answered = [ticket["status"] for passes in runs.values() for result in passes for ticket in result["ticket_runs"]]
    return 0 if all(status == 201 for status in answered) else 1


if __name__ == "__main__":
    run(main)
