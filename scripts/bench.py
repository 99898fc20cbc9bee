"""How close the ticket API's async intake gets to the physical limit: `python -m scripts.bench` (a benchmark).

(It benchmarks the API; `python -m scripts.simulator_bench` benchmarks the simulator alone.)

A ticket cannot finish faster than its three provider calls, so with N users each creating
tickets back to back no design beats N ÷ T tickets per second, T being the mean of the recorded
latencies the simulator replays (classify + draft + embed; it picks recorded calls at random).
The bench drives async intake at 8, 32, 128, 256, 512 and 1,024 users against one API process,
at 512 and 1,024 against two, and thread intake at 128, all on this machine: load generator,
simulator (speed 1, quota off), PostgreSQL and API together. Each user keeps one connection
(toolkit.load's closed loop, on aiohttp) and sends its next ticket as soon as the last answered;
their first tickets go out spread evenly over one T. Each level prints tickets per second (users
÷ mean ticket time × the share of 201s: Little's law), the limit and the fraction, latencies,
/health's p99 and the CPU each process spent per ticket (the generator's beside the API's), and
checks the targets. Where wrk is installed, it drives the 256- and 512-user levels too, as an
outside check of the bench's own generator.
"""

import argparse
import json
import time
from dataclasses import asdict

from scripts.toolkit import profile, wrk
from scripts.toolkit.bench_report import by_generator, machine, report, verdicts
from scripts.toolkit.cli import Clock, output_folder, parse_levels, progress, run
from scripts.toolkit.cpu import processes_by_role
from scripts.toolkit.levels import Level, measure, measure_with_wrk, recorded_ticket_ms, ticket_alone, window_s
from scripts.toolkit.stack import event_loop, running_stack


def main() -> int:
    """Start the stack, run every level, print the table, write JSON; exit code 1 if a target failed."""
    parser = argparse.ArgumentParser(
        prog="python -m scripts.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 every target passed, 1 one failed, 2 a start-up failed or bad arguments.",
    )
    parser.add_argument(
        "--users",
        type=parse_levels,
        default=[8, 32, 128, 256, 512, 1024],
        help="async levels (default 8,32,128,256,512,1024)",
    )
    parser.add_argument(
        "--two-process-users",
        type=parse_levels_or_none,
        default=[512, 1024],
        help="async levels with 2 API processes, for contrast (0: none; default 512,1024)",
    )
    parser.add_argument("--thread-users", type=int, default=128, help="the thread-mode level (0: skip)")
    parser.add_argument(
        "--wrk-users",
        type=parse_levels_or_none,
        default=[256, 512],
        help="async levels that wrk drives too, where it is installed (0: none; default 256,512)",
    )
    parser.add_argument("--duration", type=float, default=30, help="seconds measured per level (default %(default)s)")
    parser.add_argument(
        "--alone", type=float, default=20, help="seconds of the 2-user run, one ticket alone (default %(default)s)"
    )
    parser.add_argument(
        "--async-client",
        choices=["aiohttp", "httpx"],
        default="aiohttp",
        help="the API's PROVIDER_ASYNC_CLIENT (default %(default)s)",
    )
    parser.add_argument(
        "--loop",
        type=event_loop,
        default="asyncio",
        help="the event loop of the API and of the load generator: asyncio (default) or uvloop",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the API with py-spy at the last async level; print its busiest functions",
    )
    parser.add_argument("--out", help="folder for bench.json (default .lab/bench-DATE-TIME)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    folder = output_folder(args.out, "bench")
    recorded_ms = recorded_ticket_ms()
    ticket_s = sum(recorded_ms.values()) / 1000
    if args.wrk_users and not wrk.available():
        progress("wrk is not installed (apt install wrk): the bench runs without its outside check")
        args.wrk_users = []
    levels: list[Level] = []
    env = {"PROVIDER_ASYNC_CLIENT": args.async_client}
    progress(f"bench on {machine()}")
    with running_stack(1.0, folder / "logs", Clock()) as stack:
        with stack.api("async", env=env, loop=args.loop) as api:
            roles = processes_by_role(api.pid, stack.simulator.pid)
            alone = ticket_alone(api.url, args.alone, args.loop)
            for users in args.users:
                seconds = window_s(args.duration, users, ticket_s)
                profile_of = (api.pid, folder / "profile.txt") if args.profile and users == args.users[-1] else None
                levels.append(measure("async", users, seconds, ticket_s, api.url, roles, args.loop, profile_of))
                if users in args.wrk_users:
                    levels.append(measure_with_wrk(users, seconds, ticket_s, api.url, args.loop))
        if args.two_process_users:
            with stack.api("async", workers=2, env=env, loop=args.loop) as api:
                roles = processes_by_role(api.pid, stack.simulator.pid)
                for users in args.two_process_users:
                    seconds = window_s(args.duration, users, ticket_s)
                    levels.append(measure("async", users, seconds, ticket_s, api.url, roles, args.loop, None, 2))
        if args.thread_users:
            # 40 connections, so that the thread limiter (THREAD_LIMIT=40), not the pool, is the ceiling.
            with stack.api("thread", env={"DB_POOL_MAX_SIZE": "40", "DB_POOL_TIMEOUT_S": "60"}, loop=args.loop) as api:
                roles = processes_by_role(api.pid, stack.simulator.pid)
                seconds = window_s(args.duration, args.thread_users, ticket_s)
                levels.append(measure("thread", args.thread_users, seconds, ticket_s, api.url, roles, args.loop))
    table = report(levels, recorded_ms, alone, args.loop)
    result = {
        "machine": machine(),
        "loop": args.loop,
        "async_client": args.async_client,
        "recorded_ms": recorded_ms,
        "ticket_alone_s": alone,
        "levels": [{**asdict(lv), "tickets_per_s": lv.tickets_per_s, "fraction": lv.fraction} for lv in levels],
        "verdicts": [line.strip() for line in verdicts(*by_generator(levels))],
        "measured_at": time.strftime("%Y-%m-%d %H:%M"),
    }
    (folder / "bench.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result) if args.json else f"{machine()}\n{table}")
    if args.profile and not args.json:
        print(
            f"\nthe API's CPU at {args.users[-1]} users, share of samples by the package and the function running "
            f"(py-spy, {folder / 'profile.txt'}):"
        )
        print("\n".join(profile.shares(folder / "profile.txt", window_s(args.duration, args.users[-1], ticket_s))))
    return 1 if any(verdict.startswith("FAIL") for verdict in result["verdicts"]) else 0


def parse_levels_or_none(text: str) -> list[int]:
    """`0` for none, else levels as parse_levels reads them (an argparse type)."""
    return [] if text.strip() == "0" else parse_levels(text)


if __name__ == "__main__":
    run(main)
