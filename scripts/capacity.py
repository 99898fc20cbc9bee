"""Tickets per second under a steady Locust load, per INTAKE_MODE: `python -m scripts.capacity`.

It starts the lab as scripts.compare does, runs locustfiles/tickets.py headless against each mode
(a separate process: Locust's gevent patching stays out of this one), reads Locust's final JSON,
and sets each result against the Little's-law limit: users ÷ the provider's time per ticket,
measured on the tickets saved during the same run.
"""

import argparse
import csv
import json
import resource
import statistics
import subprocess
import sys
import time

import psutil

from scripts import charts, stack
from scripts.cli import CommandError, parse_levels, positive_float, positive_int, progress, run
from scripts.lab_stack import (
    Clock, event_loop, format_table, output_folder, parse_modes, running_lab,
)


LOCUSTFILE = "locustfiles/tickets.py"
TICKETS = ("/v1/tickets", "POST")
STOP_TIMEOUT_S = 65  # users finish the ticket in flight (Locust gives up on one after 60 s)
BUSY_GENERATOR = 0.8  # share of a core: above it, Locust itself may be what limits the load
# The course team's figures: 8 users, 40 s, median of 5 passes (tickets/s, p50 ms, p95 ms).
COURSE = {"thread": (3.22, 2237.3, 3030.2), "blocking": (0.33, 18288.2, 18292.6), "async": (3.47, 2146.6, 2734.2)}


def locust_percentile(response_times: dict, fraction: float) -> float | None:
    """Locust's own percentile over its rounded response times, so the figures equal its report's."""
    total = sum(response_times.values())
    if not total:
        return None
    processed = 0
    for ms in sorted(response_times, key=float, reverse=True):
        processed += response_times[ms]
        if total - processed <= int(total * fraction):
            return float(ms)
    return None


def read_locust_json(path: str, users: int) -> dict:
    """Successes per second, p50 and p95 of POST /v1/tickets from the JSON that Locust writes at its end.

    Each user sends its next ticket as soon as the last one answers (a closed loop), so Little's law
    holds exactly: tickets per second = users ÷ mean ticket time. Counting answers in a time window
    instead would be off by the tickets cut in half at its two ends (a few percent in 40 s).
    """
    with open(path) as file:
        entry = next((e for e in json.load(file) if (e["name"], e["method"]) == TICKETS), None)
    if entry is None or not entry["num_requests"]:
        return {"requests": 0, "failures": 0, "tickets_per_s": 0.0, "p50_ms": None, "p95_ms": None}
    successes = entry["num_requests"] - entry["num_failures"]
    mean_s = entry["total_response_time"] / entry["num_requests"] / 1000
    return {"requests": entry["num_requests"], "failures": entry["num_failures"],
            "tickets_per_s": users / mean_s * successes / entry["num_requests"] if mean_s > 0 else 0.0,
            "p50_ms": locust_percentile(entry["response_times"], 0.5),
            "p95_ms": locust_percentile(entry["response_times"], 0.95)}


def run_locust(url: str, users: int, duration_s: int, workers: int, prefix: str) -> dict:
    """Locust headless as child processes (a master and `workers` workers if > 0); returns its figures."""
    base = [sys.executable, "-m", "locust", "-f", LOCUSTFILE]
    # --json prints the final figures on stdout; the log keeps Locust's own report, failures by name included.
    master = [*base, "--headless", "-u", str(users), "-r", str(users), "-t", f"{duration_s}s", "--host", url,
              "--stop-timeout", str(STOP_TIMEOUT_S), "--json", "--only-summary"]
    commands = [master]
    if workers:
        port = stack.free_port()
        master += ["--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
                   "--expect-workers", str(workers), "--expect-workers-max-wait", "30"]
        commands += [[*base, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)]] * workers
    cpu_before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    processes = []
    try:
        with open(f"{prefix}.json", "wb") as figures, open(f"{prefix}.log", "ab") as log:
            processes = [subprocess.Popen(argv, cwd=stack.PROJECT_ROOT, stdout=figures if argv is master else log,
                                          stderr=log, stdin=subprocess.DEVNULL, **stack.OWN_GROUP)
                         for argv in commands]
        code = processes[0].wait(duration_s + STOP_TIMEOUT_S + 60)
        for worker in processes[1:]:
            worker.wait(30)
    except subprocess.TimeoutExpired:
        raise CommandError(f"Locust did not stop in time; see {prefix}.log") from None
    finally:
        for process in processes:
            stack.stop_process(process, STOP_TIMEOUT_S)
    wall_s, cpu_after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        figures = read_locust_json(f"{prefix}.json", users)
    except ValueError:
        raise CommandError(f"Locust gave no figures (exit code {code}); see {prefix}.log") from None
    cpu_s = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    # With workers, this is the mean over Locust's processes; the workers do almost all of the work.
    return {**figures, "locust_log": f"{prefix}.log", "locust_cpu_share": cpu_s / wall_s / len(processes)}


def cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by a process and its children (the API's worker processes)."""
    process = psutil.Process(pid)
    return sum(sum(p.cpu_times()[:2]) for p in [process, *process.children(recursive=True)])


def measure_modes(lab, args: argparse.Namespace, folder, clock: Clock) -> list[dict]:
    """One Locust run per mode, users level and pass; each with the limit measured in the same run."""
    runs = []
    (folder / "locust").mkdir(exist_ok=True)
    for mode in args.modes:
        progress(f"[{clock}] {mode}: starting the simulator and the API ({args.api_workers} process(es))")
        with lab.api(mode, workers=args.api_workers, loop=args.loop) as api:
            for users in args.users:
                for number in range(1, args.passes + 1):
                    label = f"{mode}, {users} users, pass {number}/{args.passes}"
                    progress(f"[{clock}] {label}: {args.duration} s of Locust ...")
                    before_id, api_cpu_before = lab.last_ticket_id(), cpu_seconds(api.process.pid)
                    started = time.monotonic()
                    figures = run_locust(api.url, users, args.duration, args.workers,
                                         str(folder / "locust" / f"{mode}-{users}u-{number}"))
                    api_cpu_s = cpu_seconds(api.process.pid) - api_cpu_before
                    saved, provider_s = lab.provider_time(before_id)
                    limit = users / provider_s if provider_s else None
                    runs.append({"mode": mode, "loop": args.loop, "users": users, "pass": number, "api_url": api.url,
                                 "simulator_url": lab.simulator.url, **figures,
                                 "tickets_saved": saved, "provider_s_per_ticket": provider_s, "limit_per_s": limit,
                                 "of_limit": figures["tickets_per_s"] / limit if limit else None,
                                 "api_cpu_ms_per_ticket": api_cpu_s * 1000 / saved if saved else None,
                                 "api_cpu_share": api_cpu_s / (time.monotonic() - started)})
                    progress(f"[{clock}] {label}: {figures['tickets_per_s']:.2f} tickets/s"
                             + (f", limit {limit:.2f} ({runs[-1]['of_limit']:.1%})" if limit else ""))
                    if figures["locust_cpu_share"] > BUSY_GENERATOR:
                        progress(f"warning: Locust used {figures['locust_cpu_share']:.0%} of a core per process: "
                                 "it may be the limit; add --workers N")
    return runs


def summarize(runs: list[dict]) -> list[dict]:
    """One row per mode and users level: medians over the passes, failures summed."""
    rows = []
    for key in dict.fromkeys((each["mode"], each["users"]) for each in runs):
        passes = [each for each in runs if (each["mode"], each["users"]) == key]
        row = {"mode": key[0], "users": key[1], "passes": len(passes),
               "failures": sum(run["failures"] for run in passes)}
        for figure in ("tickets_per_s", "p50_ms", "p95_ms", "provider_s_per_ticket", "limit_per_s", "of_limit",
                       "api_cpu_ms_per_ticket", "api_cpu_share", "locust_cpu_share"):
            values = [run[figure] for run in passes if run[figure] is not None]
            row[figure] = statistics.median(values) if values else None
        course = COURSE.get(row["mode"]) if row["users"] == 8 else None
        row["course"] = dict(zip(("tickets_per_s", "p50_ms", "p95_ms"), course)) if course else None
        rows.append(row)
    return rows


def render(rows: list[dict], duration_s: int, passes: int) -> str:
    """The course's table, with the Little's-law limit and the course's figures (8 users) on the right."""
    def ms(value: float | None, decimals: int = 0) -> str:
        # Locust keeps times rounded to two significant digits: a decimal would be noise.
        return "-" if value is None else f"{value:,.{decimals}f} ms"

    def number(value: float | None, form: str) -> str:
        return "-" if value is None else format(value, form)

    headers = ["INTAKE_MODE", "users", "tickets/s", "p50", "p95", "failed", "provider/ticket", "limit", "of limit",
               "API CPU", "|", "course: tickets/s", "p50", "p95"]
    lines = []
    for row in rows:
        course = row["course"] or {}
        lines.append([row["mode"], str(row["users"]), f"{row['tickets_per_s']:.2f}", ms(row["p50_ms"]),
                      ms(row["p95_ms"]), str(row["failures"]), number(row["provider_s_per_ticket"], ".2f") + " s",
                      number(row["limit_per_s"], ".2f"), number(row["of_limit"], ".1%"),
                      number(row["api_cpu_share"], ".0%"), "|",
                      number(course.get("tickets_per_s"), ".2f"), ms(course.get("p50_ms"), 1),
                      ms(course.get("p95_ms"), 1)])
    title = (f"Locust, {duration_s} s per run, median of {passes} pass{'es' if passes > 1 else ''}; "
             "limit = users ÷ provider time per ticket, measured in the same run; API CPU in cores (100% = one)")
    return title + "\n" + format_table(headers, lines)


def write_files(folder, rows: list[dict], runs: list[dict], speed: float, draw: bool) -> list[str]:
    """capacity.json (every run), capacity.csv (the table) and capacity.svg (the chart)."""
    paths = [folder / "capacity.json", folder / "capacity.csv"]
    paths[0].write_text(json.dumps({"speed": speed, "rows": rows, "runs": runs}, indent=2))
    columns = ["mode", "users", "passes", "tickets_per_s", "p50_ms", "p95_ms", "failures", "provider_s_per_ticket",
               "limit_per_s", "of_limit", "api_cpu_ms_per_ticket", "api_cpu_share", "locust_cpu_share"]
    with open(paths[1], "w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(columns)
        writer.writerows([row[column] for column in columns] for row in rows)
    if draw:
        paths.append(folder / "capacity.svg")
        charts.draw_capacity(rows, str(paths[-1]), "" if speed == 1 else f" (speed {speed:g})")
    return [str(path) for path in paths]


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run every mode, print and write the figures; exit code 1 if a ticket failed."""
    parser = argparse.ArgumentParser(prog="python -m scripts.capacity", description=__doc__.splitlines()[0],
                                     epilog="Exit codes: 0 every ticket answered 201, 1 some did not, "
                                            "2 a port is in use, a start-up failed or bad arguments.")
    parser.add_argument("--modes", type=parse_modes, default=["thread", "blocking", "async"],
                        help="INTAKE_MODE values in the order to run (default thread,blocking,async)")
    parser.add_argument("--users", type=parse_levels, default=[8], help="Locust users; 8,32,128 sweeps (default 8)")
    parser.add_argument("--duration", type=positive_int, default=40, help="seconds of load per run (default 40)")
    parser.add_argument("--passes", type=positive_int, default=1, help="runs per mode and users; medians (default 1)")
    parser.add_argument("--api-workers", type=positive_int, default=1,
                        help="processes of the API (uvicorn --workers), for horizontal scaling (default 1)")
    parser.add_argument("--workers", type=int, default=0,
                        help="Locust worker processes under one master, for loads one process can't make (default 0)")
    parser.add_argument("--speed", type=positive_float, default=1.0, help="the simulator's speed (default 1)")
    parser.add_argument("--loop", type=event_loop, default="asyncio",
                        help="the API's event loop: asyncio (the course's, default) or uvloop")
    parser.add_argument("--out", help="output folder (default .lab/capacity-DATE-TIME)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of the table")
    args = parser.parse_args(argv)
    if args.workers < 0:
        parser.error("--workers must be 0 or more")

    try:
        charts.load_pyplot()
        draw = True
    except CommandError as exc:
        progress(f"warning: no chart: {exc}")
        draw = False
    folder = output_folder(args.out, "capacity")
    clock = Clock()
    with running_lab(args.speed, folder / "logs", clock) as lab:
        runs = measure_modes(lab, args, folder, clock)
    rows = summarize(runs)
    written = write_files(folder, rows, runs, args.speed, draw)
    if args.json:
        print(json.dumps({"rows": rows, "runs": runs, "files": written}))
    else:
        print(render(rows, args.duration, args.passes))
    for failed in (each for each in runs if each["failures"]):
        progress(f"{failed['mode']}, {failed['users']} users, pass {failed['pass']}: {failed['failures']} tickets "
                 f"failed; Locust's report at the end of {failed['locust_log']} names them")
    progress(f"[{clock}] wrote {len(written)} files to {folder}")
    return 0 if all(row["failures"] == 0 for row in rows) else 1


if __name__ == "__main__":
    run(main)
