"""scripts.kitchens's report: one API process against two at each level, the API on two beside the reference app on
two and its targets, the stall on one worker and on two, and CPU work's spread over the workers."""

from scripts.toolkit.load.turns import JUDGED_ROUNDS, JUDGED_USERS
from scripts.toolkit.reports.bench_report import CPU_PACED, Verdict, beside, side_by_side
from scripts.toolkit.reports.text import format_table, readable_ms

TARGET_SHARE = 0.95  # of the limit, two API processes at JUDGED_USERS
AT_LEAST_OF_REFERENCE = 0.97  # or, where the reference on two falls short of the limit too, of its tickets/s
CPU_AIM = 1.00  # the API's CPU per ticket over the reference's, each over the simulator's
STALL_FIGURES = ("total_s", "health_answers", "health_median_ms", "health_slowest_ms", "health_waited_share")


def verdicts(io: dict) -> list[Verdict]:
    """At JUDGED_USERS on two processes: the target, judged as scripts.bench judges one process (where the reference
    on two falls short of the limit too, the machine is the wall: then the API must reach the reference's tickets a
    second), and the CPU aim; none if it did not run."""
    if "judged" not in io:
        return []
    ours, reference = io["judged"]
    figures = beside(ours, reference)
    tickets, cpu = (figures[name][0] / figures[name][1] for name in ("tickets/s", CPU_PACED))
    at, at_least = f"at {JUDGED_USERS} users, 2 processes", AT_LEAST_OF_REFERENCE
    reached = ours.fraction >= TARGET_SHARE or (reference.fraction < TARGET_SHARE and tickets >= at_least)
    return [
        Verdict(
            f"{at}: >= {TARGET_SHARE:.0%} of the limit, or >= {at_least} x the tickets/s of the reference on 2 where "
            "it falls short too",
            reached,
            f"{ours.fraction:.1%} of the limit (the reference: {reference.fraction:.1%}), "
            f"{tickets:.2f} x its tickets/s",
        ),
        Verdict(
            f"{at}: CPU per ticket over the simulator's <= {CPU_AIM:.2f} x the reference's",
            cpu <= CPU_AIM,
            f"{cpu:.2f}",
            aim=True,
        ),
    ]


def render(measured: dict) -> str:
    """Every part that ran, as text."""
    lines = []
    if "io" in measured:
        lines += io_lines(measured["io"], measured["ticket_s"])
    if "stall" in measured:
        lines += stall_lines(measured["stall"])
    if "cpu" in measured:
        lines += cpu_lines(measured["cpu"])
    return "\n".join(lines)


def io_lines(io: dict, ticket_s: float) -> list[str]:
    """One process against two, level by level; the API on two beside the reference on two; the targets."""
    rows = [
        [lv.users, lv.api_processes, f"{lv.tickets_per_s:.1f}", f"{lv.limit:.1f}", f"{lv.fraction:.1%}"]
        + [f"{lv.p50_ms:,.0f}", f"{lv.health_p99_ms:.1f}", f"{lv.api_cpu_ms_per_ticket:.2f}"]
        + [f"{sum(lv.cpu_ms_per_ticket.values()):.2f}", lv.failed]
        for lv in io["levels"]
    ]
    headers = ["users", "API procs", "tickets/s", "limit", "of limit", "p50 ms", "/health p99 ms", "API CPU ms"]
    lines = [
        f"I/O-bound tickets, async intake, one API process against two, in turn (1, 2, 2, 1); limit = users ÷ T, "
        f"T = {ticket_s * 1000:,.0f} ms; CPU ms per ticket of the API (every worker) and of every process:",
        "",
        format_table([*headers, "all CPU ms", "failed"], rows),
        "",
    ]
    if "judged" in io:
        ours, reference = io["judged"]
        lines += [
            f"at {JUDGED_USERS} users, the API on 2 processes beside the reference app on 2 (scripts/reference_api.py),"
            f" in turn (API, reference, reference, API, {JUDGED_ROUNDS} rounds):",
            "",
            side_by_side("users", "API", [(JUDGED_USERS, ours, reference)], "ref"),
            "",
            "targets:",
            *(verdict.line() for verdict in verdicts(io)),
            "",
        ]
    return lines


def stall_lines(rows: list[dict]) -> list[str]:
    """The stall on one worker and on two, per mode, each pass."""
    table = [
        [row["mode"], row["workers"], row["pass"], f"{row['total_s']:.1f} s", row["health_answers"]]
        + [readable_ms(row["health_median_ms"]), readable_ms(row["health_slowest_ms"])]
        + [f"{row['health_waited_share']:.0%}", row["calls_at_once"], " / ".join(map(str, row["connections"]))]
        for row in rows
    ]
    headers = ["INTAKE_MODE", "workers", "pass", "8 tickets", "/health answers", "median", "slowest", "waited"]
    return [
        "scripts.stall on one worker and on two (8 tickets, 4 at a time, /health on a connection of its own): the",
        "most provider calls in flight at once, and the connections each worker held once all five were open:",
        "",
        format_table([*headers, "calls at once", "connections by worker"], table),
        "",
    ]


def cpu_lines(rows: list[dict]) -> list[str]:
    """CPU work on one worker and on two, per generator: the rate, the generator's CPU, the spread."""
    alone = {row["generator"]: row["rps"] for row in rows if row["workers"] == 1}
    table = [
        [row["workers"], row["generator"], f"{row['rps']:.1f}", f"{row['rps'] / alone[row['generator']]:.2f}x"]
        + [f"{row['generator_cores']:.2f}", f"{row['workers_cores']:.2f}"]
        + [" / ".join(f"{share:.0%}" for share in row["cpu_shares"]), " / ".join(map(str, row["connections"]))]
        + [row["failed"]]
        for row in rows
    ]
    headers = ["workers", "generator", "req/s", "vs 1 worker", "generator's cores", "workers' cores"]
    return [
        "CPU work, GET /cpu/def (experiment 4): cores are CPU seconds a second; requests by worker from each worker's "
        "share of the CPU (each request costs the same), connections as each worker held them once all were open:",
        "",
        format_table([*headers, "requests by worker", "connections by worker", "failed"], table),
        "",
    ]
