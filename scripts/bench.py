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
import platform
import time
from dataclasses import asdict

import psutil

from scripts.toolkit import profile, wrk
from scripts.toolkit.cli import Clock, format_table, output_folder, parse_levels, progress, run
from scripts.toolkit.cpu import processes_by_role
from scripts.toolkit.levels import Level, measure, measure_with_wrk, recorded_ticket_ms, ticket_alone, window_s
from scripts.toolkit.stack import event_loop, running_stack

TARGETS = {8: 0.97, 32: 0.97, 128: 0.95, 256: 0.95}  # async, one API process: tickets/s ÷ the physical limit
HEALTH_P99_TARGET_MS, HEALTH_P99_USERS = 50, 256
WRK_AGREEMENT = {256: 0.05, 512: 0.10}  # users: how far wrk's fraction of the limit may lie from the bench's
GENERATOR_SHARE, GENERATOR_USERS = 0.10, 512  # the generator's CPU per ticket, at most this share of the API's


def by_generator(levels: list[Level]) -> tuple[dict[int, Level], list[Level]]:
    """The bench's own async levels of one API process, by users (what the targets judge), and wrk's."""
    ours = {lv.users: lv for lv in levels if lv.generator == "bench" and lv.mode == "async" and lv.api_processes == 1}
    return ours, [lv for lv in levels if lv.generator == "wrk"]


def report(levels: list[Level], recorded_ms: dict[str, float], alone: tuple[float, float], loop: str) -> str:
    """The table, the CPU per ticket, wrk beside the bench, and the targets."""
    ticket_ms = sum(recorded_ms.values())
    parts = " + ".join(f"{op} {ms:,.1f}" for op, ms in recorded_ms.items())
    lines = [
        f"event loop: {loop}; limit = users ÷ T, T = {ticket_ms:,.1f} ms, the recording's mean AI time per ticket "
        f"({parts} ms); one ticket alone (2 users): {alone[0] * 1000:,.0f} ± {alone[1] * 1000:.0f} ms",
        "",
        format_table(
            ["mode", "users", "API procs", "tickets", "tickets/s", "limit", "of limit", "±", "p50 ms", "p95 ms"]
            + ["/health p99 ms", "failed"],
            [
                [lv.mode, lv.users, lv.api_processes, lv.tickets, f"{lv.tickets_per_s:.2f}", f"{lv.limit:.2f}"]
                + [f"{lv.fraction:.1%}", f"{lv.fraction_error:.1%}", f"{lv.p50_ms:,.0f}", f"{lv.p95_ms:,.0f}"]
                + [f"{lv.health_p99_ms:.1f}", lv.failed]
                for lv in levels
                if lv.generator == "bench"
            ],
        ),
        "",
        "CPU ms per ticket, by process (and the API's by thread), in all, and the generator's share of the API's:",
        "",
        format_table(
            ["mode", "users", "API procs", *levels[0].cpu_ms_per_ticket, "all", "generator ÷ API"],
            [
                [lv.mode, lv.users, lv.api_processes, *(f"{ms:.2f}" for ms in lv.cpu_ms_per_ticket.values())]
                + [f"{sum(lv.cpu_ms_per_ticket.values()):.2f}", f"{lv.generator_share:.1%}"]
                for lv in levels
                if lv.generator == "bench"
            ],
        ),
        "",
    ]
    ours, checks = by_generator(levels)
    if checks:
        lines += [
            "wrk beside the bench (async, one API process; wrk: one thread, the same ramp, the same tickets):",
            "",
            format_table(
                ["users", "bench of limit", "wrk of limit", "±", "wrk tickets/s", "wrk p50 ms", "/health p99 ms"]
                + ["failed"],
                [
                    [lv.users, f"{ours[lv.users].fraction:.1%}" if lv.users in ours else "-", f"{lv.fraction:.1%}"]
                    + [f"{lv.fraction_error:.1%}", f"{lv.tickets_per_s:.2f}", f"{lv.p50_ms:,.0f}"]
                    + [f"{lv.health_p99_ms:.1f}", lv.failed]
                    for lv in checks
                ],
            ),
            "",
        ]
    elif ours and not wrk.available():
        lines += ["wrk is not installed (Debian's package wrk): no outside check of the bench's generator", ""]
    return "\n".join(lines + ["targets:", *verdicts(ours, checks)])


def verdicts(ours: dict[int, Level], checks: list[Level]) -> list[str]:
    """PASS or FAIL for each target, and for wrk's agreement, at the levels that ran."""
    lines = []
    for users, share in TARGETS.items():
        if users in ours:
            lines.append(
                _verdict(
                    f"{users} users >= {share:.0%} of the limit",
                    ours[users].fraction >= share,
                    f"{ours[users].fraction:.1%}",
                )
            )
    if HEALTH_P99_USERS in ours:
        p99 = ours[HEALTH_P99_USERS].health_p99_ms
        lines.append(
            _verdict(
                f"/health p99 at {HEALTH_P99_USERS} users <= {HEALTH_P99_TARGET_MS} ms",
                p99 <= HEALTH_P99_TARGET_MS,
                f"{p99:.1f} ms",
            )
        )
    if GENERATOR_USERS in ours:
        share = ours[GENERATOR_USERS].generator_share
        lines.append(
            _verdict(
                f"the generator's CPU per ticket at {GENERATOR_USERS} users <= {GENERATOR_SHARE:.0%} of the API's",
                share <= GENERATOR_SHARE,
                f"{share:.1%}",
            )
        )
    for check in checks:
        if check.users in ours and check.users in WRK_AGREEMENT:
            gap = abs(ours[check.users].fraction - check.fraction) / check.fraction
            lines.append(
                _verdict(
                    f"wrk and the bench agree within {WRK_AGREEMENT[check.users]:.0%} at {check.users} users",
                    gap <= WRK_AGREEMENT[check.users],
                    f"{gap:.1%} apart",
                )
            )
    return lines


def _verdict(what: str, ok: bool, measured: str) -> str:
    return f"  {'PASS' if ok else 'FAIL'}  {what}: {measured}"


def machine() -> str:
    """One line about this machine."""
    return (
        f"{platform.system()} {platform.machine()}, {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}"
    )


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
