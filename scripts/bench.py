"""How close the ticket API's async intake gets to the physical limit: `python -m scripts.bench` (a benchmark).

(It benchmarks the API; `python -m scripts.simulator_bench` benchmarks the simulator alone.)

A ticket cannot finish faster than its three provider calls, so with N users each creating tickets
back to back no design beats N ÷ T tickets per second, T being the mean of the recorded latencies
the simulator replays (classify + draft + embed; it picks recorded calls at random). The bench
drives async intake at 8, 32, 128, 256, 512 and 1,024 users against one API process, at 512 and
1,024 against two (uvicorn --workers 2: its CPU is every worker's), and thread intake at 128, all on
this machine: load generator, simulator (speed 1, quota off), PostgreSQL and API together. Each user
keeps one connection (toolkit.load.closed_loop's closed loop, on aiohttp) and sends its next ticket
as soon as the last answered; their first tickets go out spread evenly over one T. Each level prints
tickets per second (users ÷ mean ticket time × the share of 201s: Little's law), the limit and the
fraction, latencies, /health's p99 and the CPU each process spent per ticket (the generator's beside
the API's), and checks the targets.

Where the CPU binds (256 users and more), how far one process gets depends on the hour of the
machine: the same code has spent 2.2 times the CPU per ticket in a slow hour. So at 256 and 512
users the bench also runs, in turn with the API (API, bare, reference, reference, bare, API, twice:
the mean of four windows each), on the same generator and simulator: the same API without its
instruments ("bare": create_app(instruments=...) with none plugged in, scripts/client_apps.py), on
one process and on two, and a reference app (scripts/reference_api.py: a ticket's same I/O through
the same libraries, psycopg_pool's defaults, nothing else: the plain app a student would write). It
judges the API against both (its CPU over the simulator's in the same windows, where the machine's
pace cancels out), samples the API with py-spy at 512 users for each instrument's share of its CPU,
and times a fixed piece of Python work before and after (the pace), so that two runs can be told
apart. Where wrk is installed, it drives the 256- and 512-user levels too, in turn with the bench's
own generator (bench, wrk, wrk, bench), as an outside check of it. `--options` then measures, one at
a time against the reference, the public options of the stack that a project could take
(scripts/reference_api.py's OPTIONS).
"""

import argparse
import functools
import json
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, replace
from pathlib import Path

from scripts.client_apps import CLIENTS, INSTRUMENTS, WITHOUT
from scripts.reference_api import OPTIONS
from scripts.toolkit.cli import PROJECT_ROOT, command_parser, progress, run
from scripts.toolkit.commands.options import (
    Clock,
    add_duration,
    add_json,
    add_loop,
    add_out,
    one_or_more_of,
    output_folder,
    parse_levels,
    parse_levels_or_none,
    positive_int,
)
from scripts.toolkit.load import wrk
from scripts.toolkit.load.levels import (
    Level,
    level_figures,
    measure,
    measure_with_wrk,
    recorded_ticket_ms,
    ticket_alone,
    window_s,
)
from scripts.toolkit.load.turns import REFERENCE_APP, in_turn, options_in_turn
from scripts.toolkit.measure import profile
from scripts.toolkit.measure.cpu import Roles, pace_ms, processes_by_role
from scripts.toolkit.measure.profile import instrument_shares
from scripts.toolkit.reports.bench_report import SHARES_USERS, all_passed, judged, machine, render
from scripts.toolkit.running.apis import api as api_service
from scripts.toolkit.running.apis import started
from scripts.toolkit.running.stack import Stack, running_stack
from scripts.toolkit.services import Service

OPTIONS_USERS = 256
BARE_APP = "scripts.client_apps:without_instruments"  # the API without its instruments (LAB_INSTRUMENTS_OFF=all)
EXIT_CODES = "Exit codes: 0 every target passed, 1 one failed, 2 a start-up failed or bad arguments."
# The windows of the apps that run in turn with the API at a number of users, made from the level's window.
WindowsBeside = Callable[[int, Callable[..., Level]], list[Callable[[], Level]]]


def main() -> int:
    """Start the stack, run every level, print the table, write JSON; exit code 1 if a target failed."""
    args = parser().parse_args()
    folder = output_folder(args.out, "bench")
    recorded_ms = recorded_ticket_ms()
    ticket_s = sum(recorded_ms.values()) / 1000
    if args.wrk_users and not wrk.available():
        progress("wrk is not installed (apt install wrk): the bench runs without its outside check")
        args.wrk_users = []
    progress(f"bench on {machine()}")
    pace = [pace_ms()]
    with running_stack(1.0, folder / "logs", Clock()) as stack:
        alone, levels, options, shares = one_process(stack, args, folder, ticket_s)
        levels += two_processes_and_thread(stack, args, folder, ticket_s)
    pace.append(pace_ms())
    verdicts = judged(levels)
    table = render(levels, recorded_ms, alone, args.loop, pace, verdicts, options, shares, args.bare_off)
    result = {
        "machine": machine(),
        "loop": args.loop,
        "async_client": args.async_client,
        "recorded_ms": recorded_ms,
        "ticket_alone_s": alone,
        "pace_ms": pace,
        "levels": [level_figures(lv) for lv in levels],
        "options": {option: [level_figures(lv) for lv in pair] for option, pair in options.items()},
        "instrument_shares": shares,
        "bare_off": args.bare_off,
        "verdicts": [asdict(verdict) for verdict in verdicts],
        "measured_at": time.strftime("%Y-%m-%d %H:%M"),
    }
    (folder / "bench.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result) if args.json else f"{machine()}\n{table}")
    if args.profile and not args.json:
        profiled_s = window_s(args.duration, args.users[-1], ticket_s)
        print(
            f"\nthe API's CPU at {args.users[-1]} users, share of samples by the package and the function running "
            f"(py-spy, {folder / 'profile.txt'}):"
        )
        print("\n".join(profile.shares(folder / "profile.txt", profiled_s)))
    return 0 if all_passed(verdicts) else 1


def one_process(
    stack: Stack, args: argparse.Namespace, folder: Path, ticket_s: float
) -> tuple[tuple[float, float], list[Level], dict[str, tuple[Level, Level]], dict[str, float]]:
    """One ticket alone, then each async level on one API process: in turn with the bare API and the reference app,
    and with wrk, where asked; the instruments' shares; then the reference's options, with --options."""
    with stack.api("async", loop=args.loop, factory=CLIENTS[args.async_client][1]) as api:
        roles = processes_by_role(api.pid, stack.simulator.pid)
        with apps_beside(stack, args, folder, workers=1) as beside:
            alone = ticket_alone(api.url, args.alone, args.loop)
            levels = async_levels(args, folder, ticket_s, api, roles, beside, workers=1)
        shares = {}
        if SHARES_USERS in args.users:
            progress(f"  each instrument's share of the API's CPU: py-spy at {SHARES_USERS} users")
            path, seconds = folder / "profile-instruments.txt", window_s(args.duration, SHARES_USERS, ticket_s)
            measure("async", SHARES_USERS, seconds, ticket_s, api.url, roles, args.loop, (api.pid, path))
            shares = instrument_shares(path, PROJECT_ROOT)
        options = {}
        if args.options:
            seconds = window_s(args.duration, OPTIONS_USERS, ticket_s)
            window = functools.partial(measure, "async", OPTIONS_USERS, seconds, ticket_s, loop=args.loop)
            options = options_in_turn(
                OPTIONS,
                functools.partial(reference_app, stack, args.loop),
                window,
                stack.simulator.pid,
                folder / "logs",
            )
    return alone, levels, options, shares


def async_levels(
    args: argparse.Namespace,
    folder: Path,
    ticket_s: float,
    api: Service,
    roles: Roles,
    beside: WindowsBeside,
    workers: int,
) -> list[Level]:
    """Each async level on `workers` API processes, in turn with the apps beside it where asked; on one process,
    py-spy at the last level with --profile, and wrk in turn with the bench's own generator where asked."""
    levels: list[Level] = []
    for users in levels_on(args, workers):
        seconds = window_s(args.duration, users, ticket_s)
        window = functools.partial(measure, "async", users, seconds, ticket_s, loop=args.loop, api_processes=workers)
        ours = functools.partial(window, api.url, roles)
        profiled = args.profile and workers == 1 and users == args.users[-1]
        level = ours(profile_of=(api.pid, folder / "profile.txt") if profiled else None)
        turns: list[Callable[[], Level]] = [ours, *beside(users, window)]
        levels += in_turn(turns, args.reference_rounds, first=level) if len(turns) > 1 else [level]
        if workers == 1 and users in args.wrk_users:
            # In turn with the bench's own generator (bench, wrk, wrk, bench): both read in the same minutes.
            wrk_window = functools.partial(measure_with_wrk, users, seconds, ticket_s, api.url, args.loop)
            bench_level, wrk_level = in_turn([ours, wrk_window], rounds=1)
            levels.append(replace(wrk_level, bench_fraction=bench_level.fraction))
    return levels


def levels_on(args: argparse.Namespace, workers: int) -> list[int]:
    """The numbers of users measured on `workers` API processes (--users on one, --two-process-users on two)."""
    return args.users if workers == 1 else args.two_process_users


@contextmanager
def apps_beside(stack: Stack, args: argparse.Namespace, folder: Path, workers: int) -> Iterator[WindowsBeside]:
    """The bare API and, on one process, the reference app, beside the API (the stack's simulator), where asked; what
    it gives is the windows of those that run in turn with the API at a number of users."""
    levels = levels_on(args, workers)
    with ExitStack() as running:
        apps: list[tuple[str, Service, list[int]]] = []
        if set(args.bare_users) & set(levels):
            env = {"DATABASE_URL": stack.dsn, "INTAKE_MODE": "async", WITHOUT: ",".join(args.bare_off)}
            bare_app = api_service(
                stack.provider_url,
                env=env,
                workers=workers,
                log_dir=folder / "logs" / f"bare-{workers}",
                loop=args.loop,
                app=BARE_APP,
                factory=True,
            )
            apps.append(("bare", running.enter_context(started(bare_app)), args.bare_users))
        if workers == 1 and set(args.reference_users) & set(levels):
            reference = reference_app(stack, args.loop, folder / "logs" / "reference")
            apps.append(("reference", running.enter_context(started(reference)), args.reference_users))

        def windows(users: int, window: Callable[..., Level]) -> list[Callable[[], Level]]:
            return [
                functools.partial(window, app.url, processes_by_role(app.pid, stack.simulator.pid), app=name)
                for name, app, where in apps
                if users in where
            ]

        yield windows


def reference_app(stack: Stack, loop: str, log_dir: Path, option: str | None = None) -> Service:
    """The reference app beside the API (the stack's simulator), with one of its options if given."""
    env = {"DATABASE_URL": stack.dsn, **({"REFERENCE_OPTION": option} if option else {})}
    return api_service(stack.provider_url, env=env, log_dir=log_dir, loop=loop, app=REFERENCE_APP)


def two_processes_and_thread(stack: Stack, args: argparse.Namespace, folder: Path, ticket_s: float) -> list[Level]:
    """The async levels on two API processes, in turn with the bare API on two where asked, and thread intake's."""
    levels = []
    if args.two_process_users:
        with stack.api("async", workers=2, loop=args.loop, factory=CLIENTS[args.async_client][1]) as api:
            roles = processes_by_role(api.pid, stack.simulator.pid)
            with apps_beside(stack, args, folder, workers=2) as beside:
                levels += async_levels(args, folder, ticket_s, api, roles, beside, workers=2)
    if args.thread_users:
        # 40 connections, so that the thread limiter (THREAD_LIMIT=40), not the pool, is the ceiling.
        with stack.api("thread", env={"DB_POOL_MAX_SIZE": "40", "DB_POOL_TIMEOUT_S": "60"}, loop=args.loop) as api:
            roles = processes_by_role(api.pid, stack.simulator.pid)
            seconds = window_s(args.duration, args.thread_users, ticket_s)
            levels.append(measure("thread", args.thread_users, seconds, ticket_s, api.url, roles, args.loop))
    return levels


def parser() -> argparse.ArgumentParser:
    """The bench's command line."""
    parser = command_parser("python -m scripts.bench", __doc__, EXIT_CODES)
    parser.add_argument(
        "--users",
        type=parse_levels,
        default=[8, 32, 128, 256, 512, 1024],
        help="async levels (default 8,32,128,256,512,1024)",
    )
    add_levels(parser, "--two-process-users", [256, 512, 1024], "async levels with 2 API processes")
    add_beside_options(parser)
    parser.add_argument("--thread-users", type=int, default=128, help="the thread-mode level (0: skip)")
    add_levels(parser, "--wrk-users", [256, 512], "async levels that wrk drives too, where it is installed")
    add_duration(parser, 30, "per level")
    parser.add_argument(
        "--alone", type=float, default=20, help="seconds of the 2-user run, one ticket alone (default %(default)s)"
    )
    parser.add_argument(
        "--async-client",
        choices=["aiohttp", "httpx"],
        default="aiohttp",
        help="the async client under the API's provider.acall, of scripts/client_apps.py (default %(default)s)",
    )
    add_loop(parser, "the API and of the load generator")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the API with py-spy at the last async level; print its busiest functions",
    )
    add_out(parser, "bench", "bench.json and the logs")
    add_json(parser)
    return parser


def add_beside_options(parser: argparse.ArgumentParser) -> None:
    """The options of the apps measured beside the API: the bare API, the reference app and its OPTIONS."""
    add_levels(
        parser,
        "--bare-users",
        [256, 512],
        "async levels where the API without instruments runs in turn with it (1 and 2 procs)",
    )
    parser.add_argument(
        "--bare-off",
        type=one_or_more_of(INSTRUMENTS),
        default=INSTRUMENTS,
        help="the instruments the bare API leaves out (default: every one): "
        f"{','.join(INSTRUMENTS)}; gc_settings alone, say, measures what that one saves",
    )
    add_levels(
        parser, "--reference-users", [256, 512], "async levels where the reference app runs in turn with the API"
    )
    parser.add_argument(
        "--reference-rounds",
        type=positive_int,
        default=2,
        help="rounds of the API in turn with the apps beside it (API, bare, reference, reference, bare, API) at those "
        "levels (default %(default)s)",
    )
    parser.add_argument(
        "--options",
        action="store_true",
        help=f"also measure each public option of scripts/reference_api.py's OPTIONS against the reference as it "
        f"is, in turn (option, reference, reference, option), at {OPTIONS_USERS} users: about 2.5 minutes each",
    )


def add_levels(parser: argparse.ArgumentParser, name: str, default: list[int], what: str) -> None:
    """An option of levels that 0 switches off."""
    shown = ",".join(map(str, default))
    parser.add_argument(name, type=parse_levels_or_none, default=default, help=f"{what} (0: none; default {shown})")


if __name__ == "__main__":
    run(main)
