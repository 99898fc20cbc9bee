"""Experiment 9, when the client is the CPU work: `python -m scripts.client_cpu`.

The lesson's knowledge check: CPU work inside `async def` blocks the event loop just like a
waiting call. The HTTP client under `provider.acall` runs on that loop too. Three clients
(scripts/client_apps.py, each passed to the API's Provider), in this order: `httpx`, httpx 0.28's own
pool (httpcore), whose bookkeeping rescans every connection at every request and release, and grows with the calls in
flight (httpx issue 3215); `httpx2`, httpx2.AsyncClient as it comes, whose pool (httpcore2)
walks its connections once per event and gives a released connection to one request only; and
`aiohttp`, httpx over httpx-aiohttp's transport (the lab's default), whose pool hands out a
connection without walking the others and parses HTTP in C. For each client it starts the API
in async mode afresh per level and drives 32, 128 and 256 closed-loop users, their first
tickets spread over one T, and measures each level: tickets per second counted in the window
(in the collapse most tickets do not end within it, so the mean of those that do flatters),
the fraction of the physical limit, the mean ticket time, /health's p99, the event loop's lag
(the API's own /metrics) and what the watchdog logged.
"""

import json
import time
from dataclasses import asdict

import httpx

from scripts.client_apps import CLIENTS
from scripts.toolkit.cli import CommandError, command_parser, progress, run
from scripts.toolkit.commands.options import Clock, add_duration, add_json, add_out, output_folder, parse_levels
from scripts.toolkit.load.levels import measure, recorded_ticket_ms
from scripts.toolkit.measure.cpu import processes_by_role
from scripts.toolkit.measure.meanwhile import WatchFailed, polled_in_thread
from scripts.toolkit.measure.rates import lag_between, watchdog_lines
from scripts.toolkit.metrics import Metrics, read_metrics
from scripts.toolkit.reports import charts
from scripts.toolkit.reports.text import format_table
from scripts.toolkit.running.stack import Stack, running_stack

EXIT_CODES = "Exit codes: 0 done, 2 a start-up failed or bad arguments."
GIVE_UP_S = 15  # tickets still unanswered this long after a level's end are given up


def measure_client(stack: Stack, client: str, users: int, duration_s: float, ticket_s: float, clock: Clock) -> dict:
    """One level against a fresh API with this client: the bench's figures, the lag and the watchdog's lines."""
    with stack.api("async", factory=CLIENTS[client][1]) as api:
        roles = processes_by_role(api.pid, stack.simulator.pid)
        start = time.perf_counter() + ticket_s  # the window starts after the ramp, as measure()'s does
        readings: list[tuple[Metrics, int]] = []  # /metrics and the size of the API's log, at the window's ends

        def read_now() -> bool:
            log_size = api.log_path.stat().st_size
            text = httpx.get(f"{api.url}/metrics", timeout=120).text  # late if the loop is stuck
            readings.append((read_metrics(text), log_size))
            return len(readings) == 2

        # In a thread: the load's event loop runs in this one, from the ramp to the end; both readings are taken.
        try:
            with polled_in_thread(read_now, duration_s, "reader", paced=True, start_at=start, cut_short=False):
                level = measure("async", users, duration_s, ticket_s, api.url, roles, give_up_s=GIVE_UP_S)
        except WatchFailed as failed:
            raise CommandError(f"the API's /metrics could not be read ({client}, {users} users): {failed}") from None
    progress(f"[{clock}] {client}, {users} users: {level.counted_per_s:.1f} tickets/s of {level.limit:.1f}")
    (before, start_size), (after, end_size) = readings
    return {
        "client": client,
        "api_url": api.url,
        "simulator_url": stack.simulator.url,
        "level": level,
        "lag": lag_between(before, after),
        "watchdog": watchdog_lines(api.log_path, start_size, end_size),
    }


def render(rows: list[dict]) -> str:
    """The table: one row per client and users."""
    headers = ["client", "users", "tickets/s", "limit", "of limit", "mean ticket s", "/health p99 ms"]
    headers += ["lag mean ms", "lag p99 <= s", "watchdog lines", "API loop CPU ms/ticket"]
    table = []
    for row in rows:
        level, lag, watchdog = row["level"], row["lag"], row["watchdog"]
        table.append(
            [row["client"], level.users, f"{level.counted_per_s:.1f}", f"{level.limit:.1f}"]
            + [f"{level.counted_per_s / level.limit:.0%}", f"{level.mean_ms / 1000:.2f}", f"{level.health_p99_ms:,.0f}"]
            + [f"{(lag['mean_s'] or 0) * 1000:.1f}", f"{lag['p99_at_most_s']:g}"]
            + [watchdog["lines"], f"{level.cpu_ms_per_ticket.get('api loop', float('nan')):.2f}"]
        )
    named = [f"  {row['client']}, {row['level'].users} users: {row['watchdog']['most_named']}" for row in rows]
    named = [line for line, row in zip(named, rows, strict=True) if row["watchdog"]["most_named"]]
    return "\n".join(
        [format_table(headers, table), *(["", "the line the watchdog named most:", *named] if named else [])]
    )


def main() -> int:
    """Parse the command line, run every client at every level, print the table, write JSON and the chart."""
    parser = command_parser("python -m scripts.client_cpu", __doc__, EXIT_CODES)
    parser.add_argument("--users", type=parse_levels, default=[32, 128, 256], help="levels (default 32,128,256)")
    parser.add_argument(
        "--clients", default=",".join(CLIENTS), help="the clients, of scripts/client_apps.py (default %(default)s)"
    )
    add_duration(parser, 30, "per level")
    add_out(parser, "client-cpu", "the figures, the chart and the logs")
    add_json(parser)
    args = parser.parse_args()
    clients = [name.strip() for name in args.clients.split(",") if name.strip()]
    if not clients or set(clients) - set(CLIENTS):
        parser.error(f"--clients: give some of {', '.join(CLIENTS)}, separated by a comma")
    folder, clock = output_folder(args.out, "client-cpu"), Clock()
    ticket_s = sum(recorded_ticket_ms().values()) / 1000
    charts.load_pyplot()  # before the run, not after minutes of it
    with running_stack(1.0, folder / "logs", clock) as stack:
        rows = [
            measure_client(stack, client, users, args.duration, ticket_s, clock)
            for client in clients
            for users in args.users
        ]
    figures = [{**row, "level": {**asdict(row["level"]), "tickets_per_s": row["level"].tickets_per_s}} for row in rows]
    (folder / "client-cpu.json").write_text(json.dumps({"ticket_s": ticket_s, "rows": figures}, indent=2))
    charts.draw_client_cpu(rows, {name: label for name, (label, _) in CLIENTS.items()}, folder / "client-cpu.svg")
    print(json.dumps(figures) if args.json else render(rows))
    progress(f"figures and chart: {folder}")
    return 0


if __name__ == "__main__":
    run(main)
