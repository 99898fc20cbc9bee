"""Several kitchens: the ticket API on one worker process against two, as the next lesson (Horizontal scaling)
runs it: `python -m scripts.kitchens`.

Three parts, each compared with the same run on one process:

  io     async intake at 256, 512 and 1,024 closed-loop users (toolkit.load.levels, as scripts.bench drives
         them), one worker and two in turn (1, 2, 2, 1): each one's share of the limit (users ÷ the
         mean ticket time), CPU per ticket (every worker's) and /health's p99. At 512 users the API on two
         workers is also judged against the reference app (scripts/reference_api.py) on two, in turn (API,
         reference, reference, API, twice), as scripts.bench judges one process: 95% of the limit, or,
         where the reference falls short of it too (the machine is the wall), 0.97 of its tickets a second.
  stall  scripts.stall's 8 tickets, 4 at a time, in blocking and async mode on one worker and on two: how
         long they took, what /health saw, and the most provider calls in flight at once (one per
         worker whose loop is blocked).
  cpu    experiment 4's /cpu/def (~13 ms of Python per request) on one worker and on two, driven by the
         lab's Python generator and by wrk (native): requests a second, the generator's own CPU, and how
         the requests (each worker's CPU) and the kept-alive connections spread over the workers.

Everything runs on this machine: simulator (speed 1, quota off), PostgreSQL, the API and the generator.
"""

import asyncio
import functools
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict

import psutil

from scripts.experiments.runner import experiment_app
from scripts.experiments.settings import ExperimentSettings
from scripts.stall import measure_stall
from scripts.toolkit.cli import CommandError, command_parser, progress, run
from scripts.toolkit.commands.options import (
    Clock,
    add_duration,
    add_out,
    add_passes,
    one_or_more_of,
    output_folder,
    parse_levels,
    positive_float,
    positive_int,
)
from scripts.toolkit.load import wrk
from scripts.toolkit.load.closed_loop import closed_loop, getter, session, warm_up
from scripts.toolkit.load.levels import level_figures, recorded_ticket_ms
from scripts.toolkit.load.turns import one_against_two
from scripts.toolkit.measure.cpu import children_cpu_s, process_cpu_s
from scripts.toolkit.measure.meanwhile import polled_in_thread
from scripts.toolkit.measure.quantiles import most_at_once
from scripts.toolkit.reports.bench_report import all_passed
from scripts.toolkit.reports.kitchens_report import STALL_FIGURES, render, verdicts
from scripts.toolkit.running.apis import started
from scripts.toolkit.running.stack import Stack, running_stack
from scripts.toolkit.services import Service

PARTS = ("io", "stall", "cpu")
CPU_PATH = "/cpu/def"
STALL_CONNECTIONS = 4 + 1  # scripts.stall's four tickets at a time, a connection each, and /health's own
GENERATORS = ("python", "wrk", "wrk, new connections")  # the last sends each request on a connection of its own


def main() -> int:
    """Run the parts asked for, print the report, write kitchens.json; exit code 1 if the 512-user target failed."""
    exits = "Exit codes: 0 done, 1 the 512-user target failed, 2 a start-up failed or bad arguments."
    parser = command_parser("python -m scripts.kitchens", __doc__, exits)
    parser.add_argument("--parts", type=one_or_more_of(PARTS), default=list(PARTS), help="e.g. io,stall (default all)")
    parser.add_argument(
        "--users", type=parse_levels, default=[256, 512, 1024], help="io's users (default 256,512,1024)"
    )
    add_duration(parser, 30, "per io window")
    add_passes(parser, 3, "of the stall per mode and workers, each a row")
    parser.add_argument("--cpu-seconds", type=positive_float, default=15, help="seconds per cpu row (default 15)")
    parser.add_argument("--clients", type=positive_int, default=10, help="cpu's clients, as experiment 4 (default 10)")
    add_out(parser, "kitchens", "kitchens.json and the logs")
    args = parser.parse_args()
    if "cpu" in args.parts and not wrk.available():
        raise CommandError("the cpu part needs wrk (apt install wrk); leave it out with --parts io,stall")
    folder, clock = output_folder(args.out, "kitchens"), Clock()
    ticket_s = sum(recorded_ticket_ms().values()) / 1000
    result: dict = {"ticket_s": ticket_s, "measured_at": time.strftime("%Y-%m-%d %H:%M")}
    if {"io", "stall"} & set(args.parts):
        with running_stack(1.0, folder / "logs", clock) as stack:
            if "io" in args.parts:
                result["io"] = one_against_two(stack, args.users, args.duration, ticket_s, folder / "logs")
            if "stall" in args.parts:
                result["stall"] = stall_rows(stack, args.passes, clock)
    if "cpu" in args.parts:
        result["cpu"] = cpu_rows(args.cpu_seconds, args.clients, clock)
    judged = verdicts(result.get("io", {}))
    print(render(result))
    result["verdicts"] = [asdict(verdict) for verdict in judged]
    if "io" in result:
        result["io"] = {part: [level_figures(level) for level in levels] for part, levels in result["io"].items()}
    (folder / "kitchens.json").write_text(json.dumps(result, indent=2))
    return 0 if all_passed(judged) else 1


def stall_rows(stack: Stack, passes: int, clock: Clock) -> list[dict]:
    """scripts.stall's run in blocking and async mode on one worker and on two, each pass a row, with the
    connections each worker held once all were open (the tickets' four and /health's one)."""
    rows = []
    for mode in ("blocking", "async"):
        for workers in (1, 2):
            with stack.api(mode, workers=workers) as api:
                for number in range(1, passes + 1):
                    progress(f"[{clock}] stall, {mode} on {workers} worker(s), pass {number}/{passes} ...")
                    with looked_at_until(STALL_CONNECTIONS, functools.partial(connections_by_worker, api)) as held:
                        result = asyncio.run(measure_stall(api.url))
                    calls = [call for ticket in result["ticket_runs"] for call in ticket["provider_calls"]]
                    figures = {figure: result[figure] for figure in STALL_FIGURES if figure in result}
                    rows.append({"mode": mode, "workers": workers, "pass": number, **figures,
                                 "calls_at_once": most_at_once(calls), "connections": held})  # fmt: skip
    return rows


def cpu_rows(seconds: float, clients: int, clock: Clock) -> list[dict]:
    """/cpu/def on one worker and on two, each driven by the lab's Python generator and by wrk."""
    rows = []
    for workers in (1, 2):
        with started(experiment_app(ExperimentSettings(), workers=workers)) as app:
            for generator in GENERATORS:
                progress(f"[{clock}] cpu, {CPU_PATH} on {workers} worker(s), {clients} {generator} clients ...")
                figures = cpu_window(app, generator, seconds, clients)
                rows.append({"workers": workers, "generator": generator, **figures})
    return rows


def cpu_window(app: Service, generator: str, seconds: float, clients: int) -> dict:
    """One window of GET /cpu/def: requests a second, the generator's CPU (share of a core), each worker's share
    of the CPU spent (the requests it served: each costs the same) and the connections each one held."""
    workers = worker_processes(app)
    before = [process_cpu_s(worker) for worker in workers]
    with looked_at_until(clients, functools.partial(connections_by_worker, app)) as held:
        if generator == "python":
            figures = asyncio.run(python_get(app.url, clients, seconds))
        else:
            figures = wrk_get(f"{app.url}{CPU_PATH}", clients, seconds, keep_alive=generator == "wrk")
    spent = [process_cpu_s(worker) - was for worker, was in zip(workers, before, strict=True)]
    return {
        **figures,
        "workers_cores": sum(spent) / figures["wall_s"],
        "cpu_shares": [part / sum(spent) for part in spent],
        "connections": held,
    }


async def python_get(url: str, clients: int, seconds: float) -> dict:
    """The lab's generator (toolkit.load.closed_loop, aiohttp): `clients` kept-alive connections for `seconds`."""
    async with session(url, clients) as opened:
        await warm_up(opened, CPU_PATH)
        load = await closed_loop([getter(opened, CPU_PATH)] * clients, duration_s=seconds)
    return {"rps": load.rps, "failed": len(load.errors), "wall_s": load.wall_s, "generator_cores": load.cpu_share}


def wrk_get(url: str, clients: int, seconds: float, keep_alive: bool) -> dict:
    """wrk (one thread) for `seconds`, its CPU read from this process's ended children's (wrk has no Windows build)."""
    before = children_cpu_s()
    figures = wrk.get(url, clients, seconds, keep_alive)
    after = children_cpu_s()
    assert before is not None and after is not None  # not on Windows
    return {**figures, "generator_cores": (after - before) / figures["wall_s"]}


@contextmanager
def looked_at_until(enough: int, look: Callable[[], list[int]], every_s: float = 0.05) -> Iterator[list[int]]:
    """While the block runs, `look()` until its answer adds up to `enough`: that answer, or the largest one, fills
    the list yielded. (One look at a set time missed connections a busy machine's client had not yet opened.)"""
    seen: list[int] = []

    def look_once() -> bool:
        try:
            answer = look()
        except psutil.Error:  # a worker that ended between two looks: the next look sees the rest
            return False
        if not seen or sum(answer) > sum(seen):
            seen[:] = answer
        return sum(seen) >= enough

    with polled_in_thread(look_once, every_s, "looker"):
        yield seen


def worker_processes(app: Service) -> list[psutil.Process]:
    """The processes that serve the app's port: uvicorn's workers, or the one process without --workers."""
    process = psutil.Process(app.pid)
    listening = [child for child in process.children() if serves(child, app.port, psutil.CONN_LISTEN)]
    return listening or [process]


def connections_by_worker(app: Service) -> list[int]:
    """How many established connections to the app's port each worker holds."""
    return [serves(worker, app.port, psutil.CONN_ESTABLISHED) for worker in worker_processes(app)]


def serves(process: psutil.Process, port: int, status: str) -> int:
    """How many of the process's TCP sockets on `port` are in `status`."""
    return sum(1 for c in process.net_connections("tcp") if c.status == status and c.laddr.port == port)


if __name__ == "__main__":
    run(main)
