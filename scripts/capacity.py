"""Tickets per second under a steady Locust load, per INTAKE_MODE: `python -m scripts.capacity`.

It starts the lab as scripts.compare does, runs locustfiles/tickets.py headless against each mode
(a separate process: Locust's gevent patching stays out of this one), reads each ticket's time as
Locust's processes recorded it, and sets each result against the Little's-law limit: users ÷ the
provider's time per ticket, measured on the tickets saved during the same run. Meanwhile
toolkit.measure.held_series records what the server held (threads, DB connections, provider calls, the loop's
lag), drawn per mode and users.
"""

import argparse
import json
import time
from pathlib import Path

from scripts.toolkit.cli import command_parser, progress, run
from scripts.toolkit.commands.options import (
    Clock,
    add_duration,
    add_json,
    add_loop,
    add_no_held,
    add_out,
    add_passes,
    add_speed,
    add_workers,
    non_negative_int,
    output_folder,
    parse_levels,
    positive_int,
)
from scripts.toolkit.load.closed_loop import SATURATED_CPU_SHARE
from scripts.toolkit.load.locust import run_locust
from scripts.toolkit.measure.cpu import cpu_seconds
from scripts.toolkit.measure.database_state import last_ticket_id, provider_time_after
from scripts.toolkit.measure.held_series import recorded_in_thread
from scripts.toolkit.reports import charts
from scripts.toolkit.reports.capacity_table import median_rows, render, write_files
from scripts.toolkit.reports.held_chart import describe_peaks
from scripts.toolkit.running.stack import EXIT_CODES, Stack, add_modes_argument, running_stack


def locust_runs(stack: Stack, args: argparse.Namespace, folder: Path, clock: Clock) -> list[dict]:
    """One Locust run per mode, users level and pass; each with the limit measured in the same run.

    With args.held, each run also records what the server held meanwhile (its "held").
    """
    runs = []
    (folder / "locust").mkdir(exist_ok=True)
    for mode in args.modes:
        progress(f"[{clock}] {mode}: starting the simulator and the API ({args.workers} process(es))")
        with stack.api(mode, workers=args.workers, loop=args.loop) as api:
            for users in args.users:
                for number in range(1, args.passes + 1):
                    label = f"{mode}, {users} users, pass {number}/{args.passes}"
                    progress(f"[{clock}] {label}: {args.duration} s of Locust ...")
                    before_id, api_cpu_before = last_ticket_id(stack.dsn), cpu_seconds(api.pid)
                    started = time.monotonic()
                    with recorded_in_thread(api.url, stack.simulator.url, args.speed, args.held) as recording:
                        figures = run_locust(
                            api.url,
                            users,
                            args.duration,
                            args.locust_processes,
                            str(folder / "locust" / f"{mode}-{users}u-{number}"),
                        )
                        # before the recording's last ticks: the run's CPU and time are Locust's alone
                        api_cpu_s = cpu_seconds(api.pid) - api_cpu_before
                        elapsed_s = time.monotonic() - started
                    saved, provider_s = provider_time_after(stack.dsn, before_id)
                    limit = users / provider_s if provider_s else None
                    runs.append(
                        {
                            "mode": mode,
                            "loop": args.loop,
                            "users": users,
                            "pass": number,
                            "duration_s": args.duration,
                            "api_url": api.url,
                            "simulator_url": stack.simulator.url,
                            **figures,
                            "tickets_saved": saved,
                            "provider_s_per_ticket": provider_s,
                            "limit_per_s": limit,
                            "of_limit": figures["tickets_per_s"] / limit if limit else None,
                            "api_cpu_ms_per_ticket": api_cpu_s * 1000 / saved if saved else None,
                            "api_cpu_share": api_cpu_s / elapsed_s,
                            **({"held": recording} if recording else {}),
                        }
                    )
                    progress(
                        f"[{clock}] {label}: {figures['tickets_per_s']:.2f} tickets/s"
                        + (f", limit {limit:.2f} ({runs[-1]['of_limit']:.1%})" if limit else "")
                    )
                    if recording:
                        progress(f"[{clock}] {label}: {describe_peaks(recording['peaks'])}")
                    if (figures["locust_cpu_share"] or 0.0) >= SATURATED_CPU_SHARE:  # None on Windows: not counted
                        progress(
                            f"warning: Locust used {figures['locust_cpu_share']:.0%} of a core per process: "
                            "it may be the limit; add --locust-processes N"
                        )
    return runs


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run every mode, print and write the figures; exit code 1 if a ticket failed."""
    parser = command_parser("python -m scripts.capacity", __doc__.splitlines()[0], EXIT_CODES)
    add_modes_argument(parser, ["thread", "blocking", "async"])
    parser.add_argument("--users", type=parse_levels, default=[8], help="Locust users; 8,32,128 sweeps (default 8)")
    add_duration(parser, 40, "per run, of Locust's load", kind=positive_int)
    add_passes(parser, 1, "per mode and users; the rows show medians")
    add_workers(
        parser, also=("--api-workers",), note=", for horizontal scaling; its /metrics and CPU are every worker's"
    )
    parser.add_argument(
        "--locust-processes",
        type=non_negative_int,
        default=0,
        help="Locust worker processes under one master, for loads one process can't make (default 0)",
    )
    add_speed(parser, 1.0)
    add_loop(parser)
    add_out(parser, "capacity")
    add_json(parser, "the rows and runs")
    add_no_held(parser, "run", "held-MODE-USERSu.svg", "; the recording asks the API 6 small requests a second")
    args = parser.parse_args(argv)

    draw = charts.can_draw("chart")
    folder = output_folder(args.out, "capacity")
    clock = Clock()
    with running_stack(args.speed, folder / "logs", clock) as stack:
        runs = locust_runs(stack, args, folder, clock)
    rows = median_rows(runs)
    written = write_files(folder, rows, runs, args.speed, draw)
    if args.json:
        print(json.dumps({"rows": rows, "runs": runs, "files": written}))
    else:
        print(render(rows, args.duration, args.passes))
    for failed in (each for each in runs if each["failures"]):
        progress(
            f"{failed['mode']}, {failed['users']} users, pass {failed['pass']}: {failed['failures']} tickets "
            f"failed; Locust's report at the end of {failed['locust_log']} names them"
        )
    progress(f"[{clock}] wrote {len(written)} files to {folder}")
    return 0 if all(row["failures"] == 0 for row in rows) else 1


if __name__ == "__main__":
    run(main)
