"""scripts.bench's report: the table of its levels, the CPU each process spent per ticket, the API beside the
reference app, wrk beside the bench's own generator, and a PASS or FAIL for each target."""

import platform

import psutil

from scripts.toolkit.load import wrk
from scripts.toolkit.load.levels import Level
from scripts.toolkit.reports.text import format_table

TARGETS = {8: 0.95, 32: 0.95, 128: 0.95}  # async, one API process: tickets/s ÷ the physical limit
# Where the CPU binds, the API is judged against the reference measured in the same run, not against the
# limit: how far one core's worth of Python gets depends on the hour of the machine.
REFERENCE_USERS = 256
AT_LEAST_OF_REFERENCE = 0.97  # tickets/s
# The CPU is judged over the simulator's in the same windows: it does the same work for both apps, so a
# change of the machine's pace between their windows (10-20% seen within minutes) cancels out.
CPU_PACED = "CPU per ticket (loop + threads), over the simulator's"
AT_MOST_OF_REFERENCE = {CPU_PACED: 1.10, "/health p99": 1.5}
WRK_AGREEMENT = {256: 0.05, 512: 0.10}  # users: how far wrk's fraction of the limit may lie from the bench's
GENERATOR_SHARE, GENERATOR_USERS = 0.10, 512  # the generator's CPU per ticket, at most this share of the API's


def by_generator(levels: list[Level]) -> tuple[dict[int, Level], list[Level], dict[int, Level]]:
    """The bench's own async levels of one API process, by users (what the targets judge), wrk's, and the
    reference's by users."""
    ours = {
        lv.users: lv
        for lv in levels
        if lv.generator == "bench" and lv.mode == "async" and lv.api_processes == 1 and lv.app == "lab"
    }
    references = {lv.users: lv for lv in levels if lv.app == "reference"}
    return ours, [lv for lv in levels if lv.generator == "wrk"], references


def beside_reference(lab: Level, reference: Level) -> dict[str, tuple[float, float]]:
    """The figures the API is judged on beside the reference: name -> (the API's, the reference's)."""
    return {
        "tickets/s": (lab.tickets_per_s, reference.tickets_per_s),
        "CPU per ticket (loop + threads)": (lab.api_cpu_ms_per_ticket, reference.api_cpu_ms_per_ticket),
        CPU_PACED: (lab.api_cpu_per_simulator_cpu, reference.api_cpu_per_simulator_cpu),
        "/health p99": (lab.health_p99_ms, reference.health_p99_ms),
    }


def report(
    levels: list[Level],
    recorded_ms: dict[str, float],
    alone: tuple[float, float],
    loop: str,
    pace: list[float],
    options: dict[str, tuple[Level, Level]] | None = None,
) -> str:
    """The table, the CPU per ticket, the API beside the reference, wrk beside the bench, and the targets."""
    ticket_ms = sum(recorded_ms.values())
    bench = [lv for lv in levels if lv.generator == "bench"]  # the rows of the bench's own generator
    parts = " + ".join(f"{op} {ms:,.1f}" for op, ms in recorded_ms.items())
    lines = [
        f"event loop: {loop}; limit = users ÷ T, T = {ticket_ms:,.1f} ms, the recording's mean AI time per ticket "
        f"({parts} ms); one ticket alone (2 users): {alone[0] * 1000:,.0f} ± {alone[1] * 1000:.0f} ms",
        "",
        format_table(
            ["mode", "users", "API procs", "tickets", "tickets/s", "limit", "of limit", "±", "p50 ms", "p95 ms"]
            + ["/health p99 ms", "failed"],
            [
                [name(lv), lv.users, lv.api_processes, lv.tickets, f"{lv.tickets_per_s:.2f}", f"{lv.limit:.2f}"]
                + [f"{lv.fraction:.1%}", f"{lv.fraction_error:.1%}", f"{lv.p50_ms:,.0f}", f"{lv.p95_ms:,.0f}"]
                + [f"{lv.health_p99_ms:.1f}", lv.failed]
                for lv in bench
            ],
        ),
        "",
        "CPU ms per ticket, by process (and the API's by thread), in all, and the generator's share of the API's:",
        "",
        format_table(
            ["mode", "users", "API procs", *levels[0].cpu_ms_per_ticket, "all", "generator ÷ API"],
            [
                [name(lv), lv.users, lv.api_processes, *(f"{ms:.2f}" for ms in lv.cpu_ms_per_ticket.values())]
                + [f"{sum(lv.cpu_ms_per_ticket.values()):.2f}", f"{lv.generator_share:.1%}"]
                for lv in bench
            ],
        ),
        "",
    ]
    ours, checks, references = by_generator(levels)
    pairs = [(ours[users], reference) for users, reference in references.items() if users in ours]
    if pairs:
        lines += [
            "the API beside the reference (scripts/reference_api.py: a ticket's same I/O and nothing else), in turn",
            "(API, reference, reference, API, each round: the mean of their windows) on the same generator and",
            "simulator; CPU ms per ticket of the API's process (loop + threads), and that over the simulator's CPU",
            "per ticket in the same windows (the same work for both apps: the machine's pace cancels out):",
            "",
            side_by_side("users", "API", [(lab.users, lab, reference) for lab, reference in pairs]),
            "",
        ]
    if options:
        lines += [
            f"public options of the stack, each measured in turn with the reference as it is ({len(options)} pairs of",
            "processes, the same generator and simulator); option ÷ ref below 1 is what the option saves:",
            "",
            side_by_side("option", "option", [(name, *pair) for name, pair in options.items()]),
            "",
        ]
    lines += [
        "the machine's pace (a fixed piece of Python work, the fastest of 7 rounds, ms of CPU; lower is faster): "
        + ", ".join(f"{ms:.1f}" for ms in pace)
        + " (before and after the levels); absolute figures hold for this machine in this hour only",
        "",
    ]
    if checks:
        lines += [
            "wrk beside the bench (async, one API process; wrk: one thread, the same ramp, the same tickets; in turn:",
            "bench, wrk, wrk, bench, each generator's two windows pooled):",
            "",
            format_table(
                ["users", "bench of limit", "wrk of limit", "±", "wrk tickets/s", "wrk p50 ms", "/health p99 ms"]
                + ["failed"],
                [
                    [lv.users, f"{lv.bench_fraction:.1%}", f"{lv.fraction:.1%}"]
                    + [f"{lv.fraction_error:.1%}", f"{lv.tickets_per_s:.2f}", f"{lv.p50_ms:,.0f}"]
                    + [f"{lv.health_p99_ms:.1f}", lv.failed]
                    for lv in checks
                ],
            ),
            "",
        ]
    elif ours and not wrk.available():
        lines += ["wrk is not installed (Debian's package wrk): no outside check of the bench's generator", ""]
    return "\n".join(lines + ["targets:", *verdicts(ours, checks, references)])


def side_by_side(first: str, ours: str, rows: list[tuple[object, Level, Level]]) -> str:
    """A table of (label, ours, the reference): each figure beside_reference judges, both apps and their ratio."""
    short = ["tickets/s", "CPU ms", "CPU ÷ simulator's", "/health p99 ms"]
    headers = [first] + [head for figure in short for head in (f"{figure} {ours}", "ref", f"{ours} ÷ ref")]
    return format_table(
        headers,
        [
            [label]
            + [
                f"{figure:.2f}"
                for our_figure, reference_figure in beside_reference(mine, reference).values()
                for figure in (our_figure, reference_figure, our_figure / reference_figure)
            ]
            for label, mine, reference in rows
        ],
    )


def name(level: Level) -> str:
    """A level's first column: its INTAKE_MODE, or the reference app."""
    return level.mode if level.app == "lab" else level.app


def verdicts(ours: dict[int, Level], checks: list[Level], references: dict[int, Level]) -> list[str]:
    """PASS or FAIL for each target, and for wrk's agreement, at the levels that ran."""
    judged = []  # (the target, whether it holds, the measured figure)
    for users, share in TARGETS.items():
        if users in ours:
            fraction = ours[users].fraction
            judged.append((f"{users} users >= {share:.0%} of the limit", fraction >= share, f"{fraction:.1%}"))
    if REFERENCE_USERS in ours and REFERENCE_USERS in references:
        figures = beside_reference(ours[REFERENCE_USERS], references[REFERENCE_USERS])
        at = f"at {REFERENCE_USERS} users"
        ratio = figures["tickets/s"][0] / figures["tickets/s"][1]
        what = f"tickets/s {at} >= {AT_LEAST_OF_REFERENCE} x the reference's"
        judged.append((what, ratio >= AT_LEAST_OF_REFERENCE, f"{ratio:.2f}"))
        for figure, most in AT_MOST_OF_REFERENCE.items():
            ratio = figures[figure][0] / figures[figure][1]
            judged.append((f"{figure} {at} <= {most} x the reference's", ratio <= most, f"{ratio:.2f}"))
    if GENERATOR_USERS in ours:
        share = ours[GENERATOR_USERS].generator_share
        what = f"the generator's CPU per ticket at {GENERATOR_USERS} users <= {GENERATOR_SHARE:.0%} of the API's"
        judged.append((what, share <= GENERATOR_SHARE, f"{share:.1%}"))
    for check in checks:
        if check.users in WRK_AGREEMENT:
            gap = abs(check.bench_fraction - check.fraction) / check.fraction
            what = f"wrk and the bench agree within {WRK_AGREEMENT[check.users]:.0%} at {check.users} users"
            judged.append((what, gap <= WRK_AGREEMENT[check.users], f"{gap:.1%} apart"))
    return [f"  {'PASS' if ok else 'FAIL'}  {what}: {measured}" for what, ok, measured in judged]


def machine() -> str:
    """One line about this machine."""
    return (
        f"{platform.system()} {platform.machine()}, {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}"
    )
