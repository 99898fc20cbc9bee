"""How close the ticket API's async intake gets to the physical limit: `python -m scripts.bench` (a benchmark).

(It benchmarks the API; `python -m simulator.bench` benchmarks the simulator alone.)

With N users each creating tickets back to back, no design beats N ÷ T tickets per second, where
T is the time of one ticket (Little's law). The bench measures T with 2 users, then async intake
at 8, 128, 256, 512 and 1,024 users, async intake with 2 API processes at 1,024 users and thread
intake at 128, all on this machine: load generator, simulator (speed 1, quota off), PostgreSQL and
API together. It prints each level's tickets per second, the
limit and the ratio, latencies, the CPU each process spent per ticket and /health's p99, and
checks the lab's targets. The API and the load generator run on asyncio's own event loop, as
the course did, unless --loop uvloop.
"""

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson
import psutil

from scripts.toolkit.answers import server_timing
from scripts.toolkit.cli import (
    Clock,
    CommandError,
    format_table,
    output_folder,
    parse_levels,
    positive_int,
    progress,
    run,
)
from scripts.toolkit.dataset import random_ticket
from scripts.toolkit.lab import event_loop, running_lab
from scripts.toolkit.load import run_on
from scripts.toolkit.quantiles import quantile
from simulator.loadgen import run_load
from ticket_api.embedded import PGDATA

HEALTH_INTERVAL_S = 0.1
PROFILE_RATE = 100  # py-spy samples per second
TARGETS = {8: 0.95, 128: 0.90, 256: 0.85, 512: 0.95, 1024: 0.75}  # async tickets/s (one API process) / limit
HEALTH_P99_TARGET_MS, HEALTH_P99_USERS = 50, 512
API_CPU_TARGET_MS, ALL_CPU_TARGET_MS, CPU_USERS = 3.0, 5.0, 256  # CPU ms per ticket: the API's, everything's
OVERHEAD_P50_TARGET_MS = 10  # server time minus provider time, at 8 users


@dataclass
class Level:
    """The figures of one mode at one number of users."""

    mode: str
    users: int
    api_processes: int
    tickets: int
    failed: int
    tickets_per_s: float
    limit: float
    ratio: float
    p50_ms: float
    p95_ms: float
    overhead_p50_ms: float
    health_p99_ms: float
    cpu_ms_per_ticket: dict

    @property
    def api_cpu_ms_per_ticket(self) -> float:
        """The API's CPU per ticket: its event-loop thread and its other threads."""
        return self.cpu_ms_per_ticket["api loop"] + self.cpu_ms_per_ticket["api threads"]


def ticket_requests(host: str, port: int, count: int = 500, seed: int = 7) -> list[bytes]:
    """Ready-to-send POST /v1/tickets requests with varied customers, subjects and bodies."""
    rng = random.Random(seed)
    requests = []
    for _ in range(count):
        body = orjson.dumps(random_ticket(rng))
        head = (
            f"POST /v1/tickets HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        requests.append(head.encode() + body)
    return requests


def processes(api_pid: int, simulator_pid: int) -> Callable[[], dict[str, list[psutil.Process]]]:
    """The processes whose CPU time the bench counts, by role: listed anew at each look.

    Anew, because PostgreSQL starts a backend for each connection the API's pool opens under load,
    and a list made at start-up would miss them (their CPU went uncounted before).
    """
    postmaster = psutil.Process(int((PGDATA / "postmaster.pid").read_text().split()[0]))
    roots = {"api": psutil.Process(api_pid), "simulator": psutil.Process(simulator_pid)}

    def family(parent: psutil.Process) -> list[psutil.Process]:
        try:
            return [parent, *parent.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def groups() -> dict[str, list[psutil.Process]]:
        return {
            **{role: family(root) for role, root in roots.items()},
            "postgres": family(postmaster),
            "generator": [psutil.Process(os.getpid())],
        }

    return groups


Snapshot = dict[str, dict[int, float]]  # role (the API's split into loop and threads) -> pid -> CPU seconds


def cpu_snapshot(groups: dict[str, list[psutil.Process]]) -> Snapshot:
    """CPU seconds (user + system) each process of each role has used so far; the API's split into its loop
    and other threads.

    A process's main thread (its thread id is the pid) runs uvicorn's event loop; the others are
    AnyIO's worker threads (the database calls), the watchdog and psycopg's pool.
    """
    snapshot: Snapshot = {"api loop": {}, "api threads": {}, "simulator": {}, "postgres": {}, "generator": {}}
    for role, members in groups.items():
        for process in members:
            try:
                times = process.cpu_times()
                total = times.user + times.system
                if role == "api":
                    loop = sum(t.user_time + t.system_time for t in process.threads() if t.id == process.pid)
                    snapshot["api loop"][process.pid], snapshot["api threads"][process.pid] = loop, total - loop
                else:
                    snapshot[role][process.pid] = total
            except psutil.NoSuchProcess:
                pass
    return snapshot


def cpu_between(before: Snapshot, after: Snapshot) -> dict[str, float]:
    """CPU seconds by role between two snapshots; a process born in between counts whole (it all fell inside)."""
    return {
        role: sum(seconds - before[role].get(pid, 0.0) for pid, seconds in pids.items()) for role, pids in after.items()
    }


async def cpu_of_window(
    groups: Callable[[], dict[str, list[psutil.Process]]], start: float, duration_s: float
) -> dict[str, float]:
    """CPU seconds by role from `start` (time.monotonic()) for `duration_s`: the measured window only.

    psutil reads /proc in a thread, so the generator's loop keeps its pace.
    """
    await asyncio.sleep(start - time.monotonic())
    before = await asyncio.to_thread(lambda: cpu_snapshot(groups()))
    await asyncio.sleep(start + duration_s - time.monotonic())
    after = await asyncio.to_thread(lambda: cpu_snapshot(groups()))
    return cpu_between(before, after)


def measure(
    mode: str,
    users: int,
    duration_s: float,
    ticket_s: float,
    api,
    groups,
    loop: str,
    profile_to: Path | None = None,
    api_processes: int = 1,
) -> Level:
    """Drive `users` closed-loop users for `duration_s` after a ramp of one ticket time."""
    progress(f"  {mode}, {users} users: {ticket_s:.1f} s ramp + {duration_s:g} s")
    host, port = "127.0.0.1", api.port

    async def load_and_cpu() -> tuple[dict, dict[str, float]]:
        # The window starts after the ramp, as run_load's own `measure_from` does (both from now).
        window_start = time.monotonic() + ticket_s
        return await asyncio.gather(
            run_load(
                host,
                port,
                users,
                duration_s,
                HEALTH_INTERVAL_S,
                ramp_s=ticket_s,
                requests=ticket_requests(host, port),
                capture=b"server-timing",
            ),
            cpu_of_window(groups, window_start, duration_s),
        )

    with sampled(api.process.pid, profile_to, ticket_s, duration_s):
        load, cpu = run_on(loop)(load_and_cpu())
    # Tickets that ended inside the measured window, whenever they started: a closed loop's throughput.
    window_end = load["measure_from"] + duration_s
    window = [call for call in load["calls"] if load["measure_from"] <= call[1] <= window_end]
    done = [call for call in window if call[2] == 201]
    latencies = sorted((end - start) * 1000 for start, end, _, _ in done)
    timings = [server_timing(call[3]) for call in done]
    limit = users / ticket_s
    throughput = len(done) / duration_s
    return Level(
        mode=mode,
        users=users,
        api_processes=api_processes,
        tickets=len(done),
        failed=len(window) - len(done),
        tickets_per_s=throughput,
        limit=limit,
        ratio=throughput / limit,
        p50_ms=quantile(latencies, 0.5),
        p95_ms=quantile(latencies, 0.95),
        overhead_p50_ms=statistics.median(t["total"] - t["ai"] for t in timings) if timings else float("nan"),
        health_p99_ms=quantile(sorted(load["health_ms"]), 0.99),
        # The CPU of the measured window over the tickets that ended in it.
        cpu_ms_per_ticket={role: seconds * 1000 / max(1, len(done)) for role, seconds in cpu.items()},
    )


@contextmanager
def sampled(pid: int, profile_to: Path | None, delay_s: float, duration_s: float) -> Iterator[None]:
    """With a path: py-spy samples, for `duration_s` after `delay_s`, the GIL holder's stack (raw format)."""
    if profile_to is None:
        yield
        return
    py_spy = shutil.which("py-spy", path=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    if py_spy is None:
        raise CommandError("--profile needs py-spy: pip install py-spy")
    command = (
        f"sleep {delay_s:.1f}; exec {py_spy} record -p {pid} -d {int(duration_s)} -r {PROFILE_RATE} -f raw "
        f"-o {profile_to} --threads --gil --nonblocking"
    )
    spy = subprocess.Popen(["sh", "-c", command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        spy.wait(timeout=duration_s + 30)


def profile_shares(path: Path, seconds: float, rate: int, count: int = 8) -> list[str]:
    """Where the API's threads spent their CPU (py-spy raw profile, --threads): each kind's share of a core,
    then its busiest packages and functions (the innermost frame of each sample)."""
    kinds: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        stack, _, number = line.rpartition(" ")
        thread, *frames = stack.split(";")
        name = thread.partition(": ")[2]
        kind = (
            "event-loop thread"
            if name == "MainThread"
            else "worker threads"
            if name.startswith("AnyIO worker")
            else "other threads"
        )
        figures = kinds.setdefault(kind, {"samples": 0, "package": {}, "function": {}})
        figures["samples"] += int(number)
        innermost = frames[-1] if frames else "?"
        # "function (package/module.py:line)"
        function, _, where = innermost.partition(" (")
        package = where.split("/")[0].split(":")[0].removesuffix(".py") or "?"
        module = where.rpartition(":")[0]
        for table, key in ((figures["package"], package), (figures["function"], f"{function} ({module})")):
            table[key] = table.get(key, 0) + int(number)
    lines = []
    for kind, figures in sorted(kinds.items(), key=lambda item: -item[1]["samples"]):
        samples = figures["samples"]
        lines.append(f"{kind}: {samples / (seconds * rate):.0%} of a core")
        for table in ("package", "function"):
            ranked = sorted(figures[table].items(), key=lambda item: -item[1])[:count]
            lines += [f"  {n / samples:6.1%}  {key}" for key, n in ranked]
    return lines


def calibrate(api, duration_s: float, loop: str) -> tuple[float, float]:
    """T, the mean time of one ticket with 2 users (nothing waits but for the provider), and its standard error."""
    progress(f"  calibration: 2 users for {duration_s:g} s")
    load = run_on(loop)(
        run_load("127.0.0.1", api.port, 2, duration_s, 0, ramp_s=1.0, requests=ticket_requests("127.0.0.1", api.port))
    )
    times = [end - start for start, end, status, _ in load["calls"] if status == 201]
    return statistics.fmean(times), statistics.stdev(times) / len(times) ** 0.5


def report(levels: list[Level], ticket_s: float, ticket_error_s: float, client: str, loop: str) -> str:
    """The table and the targets."""
    headers = [
        "mode",
        "users",
        "API procs",
        "tickets/s",
        "limit",
        "of limit",
        "p50 ms",
        "p95 ms",
        "API CPU ms/ticket",
        "all CPU ms/ticket",
        "/health p99 ms",
        "failed",
    ]
    rows = [
        [
            lv.mode,
            lv.users,
            lv.api_processes,
            f"{lv.tickets_per_s:.2f}",
            f"{lv.limit:.2f}",
            f"{lv.ratio:.0%}",
            f"{lv.p50_ms:,.0f}",
            f"{lv.p95_ms:,.0f}",
            f"{lv.api_cpu_ms_per_ticket:.1f}",
            f"{sum(lv.cpu_ms_per_ticket.values()):.1f}",
            f"{lv.health_p99_ms:.1f}",
            lv.failed,
        ]
        for lv in levels
    ]
    lines = [
        f"event loop: {loop}; async client: {client}; "
        f"T (one ticket, 2 users) = {ticket_s * 1000:,.0f} ± {ticket_error_s * 1000:.0f} ms "
        f"(standard error; the limits share its uncertainty, ±{ticket_error_s / ticket_s:.1%}); limit = users / T",
        "",
        format_table(headers, rows),
        "",
        "CPU ms per ticket, by process (and the API's by thread):",
        "",
        format_table(
            ["mode", "users", "API procs", *levels[0].cpu_ms_per_ticket],
            [
                [lv.mode, lv.users, lv.api_processes, *(f"{ms:.2f}" for ms in lv.cpu_ms_per_ticket.values())]
                for lv in levels
            ],
        ),
        "",
        "targets:",
    ]
    for lv in (lv for lv in levels if lv.mode == "async" and lv.api_processes == 1):
        if lv.users in TARGETS:
            lines.append(
                _verdict(
                    f"async at {lv.users} users >= {TARGETS[lv.users]:.0%} of the limit",
                    lv.ratio >= TARGETS[lv.users],
                    f"{lv.ratio:.1%}",
                )
            )
        if lv.users == HEALTH_P99_USERS:
            lines.append(
                _verdict(
                    f"/health p99 at {lv.users} users <= {HEALTH_P99_TARGET_MS} ms",
                    lv.health_p99_ms <= HEALTH_P99_TARGET_MS,
                    f"{lv.health_p99_ms:.1f} ms",
                )
            )
        if lv.users == CPU_USERS:
            all_cpu_ms = sum(lv.cpu_ms_per_ticket.values())
            lines.append(
                _verdict(
                    f"API CPU at {lv.users} users <= {API_CPU_TARGET_MS} ms per ticket",
                    lv.api_cpu_ms_per_ticket <= API_CPU_TARGET_MS,
                    f"{lv.api_cpu_ms_per_ticket:.2f} ms",
                )
            )
            lines.append(
                _verdict(
                    f"all-stack CPU at {lv.users} users <= {ALL_CPU_TARGET_MS} ms per ticket",
                    all_cpu_ms <= ALL_CPU_TARGET_MS,
                    f"{all_cpu_ms:.2f} ms",
                )
            )
        if lv.users == 8:
            lines.append(
                _verdict(
                    f"API overhead p50 at 8 users <= {OVERHEAD_P50_TARGET_MS} ms",
                    lv.overhead_p50_ms <= OVERHEAD_P50_TARGET_MS,
                    f"{lv.overhead_p50_ms:.1f} ms",
                )
            )
    return "\n".join(lines)


def _verdict(what: str, ok: bool, measured: str) -> str:
    return f"  {'PASS' if ok else 'FAIL'}  {what}: {measured}"


def machine() -> str:
    """One line about this machine."""
    return (
        f"{platform.system()} {platform.machine()}, {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}"
    )


def main() -> int:
    """Start the stack, run every level, print the table, write JSON."""
    parser = argparse.ArgumentParser(
        prog="python -m scripts.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--users", type=parse_levels, default=[8, 128, 256, 512, 1024], help="async levels (default 8,128,256,512,1024)"
    )
    parser.add_argument(
        "--two-process-users",
        type=int,
        default=1024,
        help="async with 2 API processes at this level, for contrast (0: skip; default %(default)s)",
    )
    parser.add_argument("--thread-users", type=int, default=128, help="the thread-mode level (0: skip)")
    parser.add_argument("--duration", type=float, default=30, help="seconds measured per level (default %(default)s)")
    parser.add_argument("--calibration", type=float, default=60, help="seconds of the 2-user run (default %(default)s)")
    parser.add_argument(
        "--async-client",
        choices=["httptools", "aiohttp", "httpx"],
        default="httptools",
        help="the API's PROVIDER_ASYNC_CLIENT (default %(default)s)",
    )
    parser.add_argument(
        "--loop",
        type=event_loop,
        default="asyncio",
        help="the event loop of the API and of the load generator: asyncio (default) or uvloop",
    )
    parser.add_argument(
        "--api-workers",
        type=positive_int,
        default=1,
        help="uvicorn worker processes of the async API (default %(default)s)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the API with py-spy at the last async level; print its busiest functions",
    )
    parser.add_argument("--out", help="folder for bench.json (default .lab/bench-DATE-TIME)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    users = args.users
    folder = output_folder(args.out, "bench")
    clock = Clock()
    levels: list[Level] = []
    progress(f"bench on {machine()}")
    with running_lab(1.0, folder / "logs", clock) as lab:
        with lab.api(
            "async", workers=args.api_workers, env={"PROVIDER_ASYNC_CLIENT": args.async_client}, loop=args.loop
        ) as api:
            groups = processes(api.process.pid, lab.simulator.process.pid)
            ticket_s, ticket_error_s = calibrate(api, args.calibration, args.loop)
            for count in users:
                profile_to = folder / "profile.txt" if args.profile and count == users[-1] else None
                levels.append(
                    measure(
                        "async",
                        count,
                        args.duration,
                        ticket_s,
                        api,
                        groups,
                        args.loop,
                        profile_to,
                        api_processes=args.api_workers,
                    )
                )
        if args.two_process_users:
            with lab.api("async", workers=2, env={"PROVIDER_ASYNC_CLIENT": args.async_client}, loop=args.loop) as api:
                groups = processes(api.process.pid, lab.simulator.process.pid)
                levels.append(
                    measure(
                        "async",
                        args.two_process_users,
                        args.duration,
                        ticket_s,
                        api,
                        groups,
                        args.loop,
                        api_processes=2,
                    )
                )
        if args.thread_users:
            # 40 connections, so that the thread limiter (THREAD_LIMIT=40), not the pool, is the ceiling.
            with lab.api("thread", env={"DB_POOL_MAX_SIZE": "40", "DB_POOL_TIMEOUT_S": "60"}, loop=args.loop) as api:
                groups = processes(api.process.pid, lab.simulator.process.pid)
                levels.append(measure("thread", args.thread_users, args.duration, ticket_s, api, groups, args.loop))
    result = {
        "machine": machine(),
        "loop": args.loop,
        "async_client": args.async_client,
        "ticket_s": ticket_s,
        "ticket_error_s": ticket_error_s,
        "levels": [asdict(level) for level in levels],
        "measured_at": time.strftime("%Y-%m-%d %H:%M"),
    }
    (folder / "bench.json").write_text(json.dumps(result, indent=2))
    table = report(levels, ticket_s, ticket_error_s, args.async_client, args.loop)
    print(json.dumps(result) if args.json else f"{machine()}\n{table}")
    if args.profile and not args.json:
        print(
            f"\nthe API's CPU at {users[-1]} users, share of samples by the package and the function running "
            f"(py-spy, {folder / 'profile.txt'}):"
        )
        print("\n".join(profile_shares(folder / "profile.txt", args.duration, PROFILE_RATE)))
    return 0


if __name__ == "__main__":
    run(main)
