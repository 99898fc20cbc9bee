"""Running Locust (locustfiles/tickets.py) headless in child processes and reading its own figures.

Never import locust here: it monkey-patches the process with gevent. Its final JSON holds every
ticket, those finished during --stop-timeout included (its --csv stats are written before them,
so a blocking-mode run of 20 s has no percentile there): the percentiles are computed from that
JSON with Locust's own rule.
"""

import json
import resource
import subprocess
import sys
import time

from scripts.toolkit.cli import PROJECT_ROOT, CommandError
from scripts.toolkit.processes import OWN_GROUP, free_port, stop_process

LOCUSTFILE = "locustfiles/tickets.py"
TICKETS = ("/v1/tickets", "POST")
STOP_TIMEOUT_S = 65  # users finish the ticket in flight (Locust gives up on one after 60 s)


def read_locust_figures(prefix: str, users: int) -> dict:
    """Successes per second, p50 and p95 of POST /v1/tickets from what Locust writes at its end.

    `prefix`.json is its final JSON.

    Each user sends its next ticket as soon as the last one answers (a closed loop), so Little's law
    holds exactly: tickets per second = users ÷ mean ticket time. Counting answers in a time window
    instead would be off by the tickets cut in half at its two ends (a few percent in 40 s).
    """
    with open(f"{prefix}.json") as file:
        entry = next((e for e in json.load(file) if (e["name"], e["method"]) == TICKETS), None)
    if entry is None or not entry["num_requests"]:
        return {"requests": 0, "failures": 0, "tickets_per_s": 0.0, "p50_ms": None, "p95_ms": None}
    successes = entry["num_requests"] - entry["num_failures"]
    mean_s = entry["total_response_time"] / entry["num_requests"] / 1000
    return {
        "requests": entry["num_requests"],
        "failures": entry["num_failures"],
        "tickets_per_s": users / mean_s * successes / entry["num_requests"] if mean_s > 0 else 0.0,
        "p50_ms": locust_percentile(entry["response_times"], 0.5),
        "p95_ms": locust_percentile(entry["response_times"], 0.95),
    }


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


def run_locust(url: str, users: int, duration_s: int, workers: int, prefix: str) -> dict:
    """Locust headless as child processes (a master and `workers` workers if > 0); returns its figures."""
    base = [sys.executable, "-m", "locust", "-f", LOCUSTFILE]
    # --json prints the final figures on stdout; the log keeps Locust's own report, failures by name included.
    master = [
        *base,
        "--headless",
        "-u",
        str(users),
        "-r",
        str(users),
        "-t",
        f"{duration_s}s",
        "--host",
        url,
        "--stop-timeout",
        str(STOP_TIMEOUT_S),
        "--json",
        "--only-summary",
    ]
    commands = [master]
    if workers:
        port = free_port()
        master += [
            "--master",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(port),
            "--expect-workers",
            str(workers),
            "--expect-workers-max-wait",
            "30",
        ]
        commands += [[*base, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)]] * workers
    cpu_before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    processes = []
    try:
        with open(f"{prefix}.json", "wb") as figures, open(f"{prefix}.log", "ab") as log:
            processes = [
                subprocess.Popen(
                    argv,
                    cwd=PROJECT_ROOT,
                    stdout=figures if argv is master else log,
                    stderr=log,
                    stdin=subprocess.DEVNULL,
                    **OWN_GROUP,
                )
                for argv in commands
            ]
        code = processes[0].wait(duration_s + STOP_TIMEOUT_S + 60)
        for worker in processes[1:]:
            worker.wait(30)
    except subprocess.TimeoutExpired:
        raise CommandError(f"Locust did not stop in time; see {prefix}.log") from None
    finally:
        for process in processes:
            stop_process(process, STOP_TIMEOUT_S)
    wall_s, cpu_after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        figures = read_locust_figures(prefix, users)
    except (ValueError, OSError):
        raise CommandError(f"Locust gave no figures (exit code {code}); see {prefix}.log") from None
    cpu_s = (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)
    # With workers, this is the mean over Locust's processes; the workers do almost all of the work.
    return {**figures, "locust_log": f"{prefix}.log", "locust_cpu_share": cpu_s / wall_s / len(processes)}
