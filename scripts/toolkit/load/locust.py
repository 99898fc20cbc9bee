"""Running Locust (locustfiles/tickets.py) headless in child processes and reading each ticket's time.

Never import locust here: it monkey-patches the process with gevent. Locust loads the lab's plugin
toolkit/load/request_times.py beside the student's locustfile; every Locust process that sends requests
writes each request's time to a CSV of its own, unrounded (Locust's report keeps two significant
digits), the tickets finished during --stop-timeout included. The figures are computed from those
files; Locust's final JSON and its report stay beside them, Locust's own view of the run.
"""

import csv
import shutil
import subprocess
import sys
import time
from pathlib import Path

from scripts.toolkit.cli import CommandError
from scripts.toolkit.measure.cpu import children_cpu_s
from scripts.toolkit.measure.quantiles import quantile
from scripts.toolkit.processes import free_port, start_process, stop_process

LOCUSTFILE = "locustfiles/tickets.py"
RECORDER = "scripts/toolkit/load/request_times.py"
TICKETS = ("POST", "/v1/tickets")
STOP_TIMEOUT_S = 65  # users finish the ticket in flight (Locust gives up on one after 60 s)


def read_ticket_times(folder: Path) -> list[tuple[float, bool]]:
    """(milliseconds, succeeded) of every POST /v1/tickets in the folder's CSVs, one per Locust process."""
    files = sorted(folder.glob("*.csv"))
    if not files:
        raise OSError(f"no request times in {folder}")
    times = []
    for path in files:
        with open(path, newline="") as file:
            for row in csv.DictReader(file):
                if (row["method"], row["name"]) == TICKETS:
                    times.append((float(row["response_time_ms"]), row["ok"] == "1"))
    return times


def ticket_figures(times: list[tuple[float, bool]], users: int) -> dict:
    """Successes per second, p50 and p95 of the tickets: each one answered counts, a failure too (as in Locust's).

    A ticket's time is what its user waited, whatever the answer, so the percentiles and the mean
    are over the same tickets. Each user sends its next ticket as soon as the last one answers (a
    closed loop), so Little's law holds exactly: tickets per second = users ÷ mean ticket time.
    Counting answers in a time window instead would be off by the tickets cut in half at its two
    ends (a few percent in 40 s).
    """
    if not times:
        return {"requests": 0, "failures": 0, "tickets_per_s": 0.0, "p50_ms": None, "p95_ms": None}
    all_ms = [ms for ms, _ in times]
    successes = sum(ok for _, ok in times)
    mean_s = sum(all_ms) / len(all_ms) / 1000
    return {
        "requests": len(times),
        "failures": len(times) - successes,
        "tickets_per_s": users / mean_s * successes / len(times) if mean_s > 0 else 0.0,
        "p50_ms": quantile(all_ms, 0.5),
        "p95_ms": quantile(all_ms, 0.95),
    }


def run_locust(url: str, users: int, duration_s: int, workers: int, prefix: str) -> dict:
    """Locust headless as child processes (a master and `workers` workers if > 0); returns its figures.

    Each ticket's time goes to `prefix`-times/, Locust's JSON to `prefix`.json, its log to `prefix`.log.
    """
    times = Path(f"{prefix}-times").resolve()  # Locust runs in the project's folder
    shutil.rmtree(times, ignore_errors=True)
    times.mkdir(parents=True)
    base = [sys.executable, "-m", "locust", "-f", f"{LOCUSTFILE},{RECORDER}"]
    # --json prints the final figures on stdout; the log keeps Locust's own report, failures by name included.
    master = [*base, "--headless", "-u", str(users), "-r", str(users), "-t", f"{duration_s}s", "--host", url]
    master += ["--stop-timeout", str(STOP_TIMEOUT_S), "--json", "--only-summary", "--times-folder", str(times)]
    commands = [master]
    if workers:
        port = free_port()
        master += ["--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port)]
        master += ["--expect-workers", str(workers), "--expect-workers-max-wait", "30"]
        commands += [[*base, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)]] * workers
    cpu_before, started = children_cpu_s(), time.monotonic()
    processes: list[subprocess.Popen] = []
    try:
        with open(f"{prefix}.json", "wb") as summary, open(f"{prefix}.log", "ab") as log:
            processes = [
                start_process(argv, stdout=summary if argv is master else log, stderr=log) for argv in commands
            ]
        code = processes[0].wait(duration_s + STOP_TIMEOUT_S + 60)
        # a master quits at once; its workers still finish the tickets in flight
        for worker in processes[1:]:
            worker.wait(STOP_TIMEOUT_S + 30)
    except subprocess.TimeoutExpired:
        raise CommandError(f"Locust did not stop in time; see {prefix}.log") from None
    finally:
        for process in processes:
            stop_process(process, STOP_TIMEOUT_S)
    wall_s, cpu_after = time.monotonic() - started, children_cpu_s()
    try:
        figures = ticket_figures(read_ticket_times(times), users)
    except (ValueError, KeyError, OSError):
        raise CommandError(f"Locust recorded no ticket times (exit code {code}); see {prefix}.log") from None
    # With workers, this is the mean over Locust's processes; the workers do almost all of the work. None on Windows.
    share = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) / wall_s / len(processes)
    return {**figures, "locust_log": f"{prefix}.log", "locust_cpu_share": share}
