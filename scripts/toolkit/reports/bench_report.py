"""scripts.bench's report: the table of its levels, the CPU each process spent per ticket, the API beside itself without
instruments and beside the reference app, each instrument's share, wrk beside the bench's own generator, and a
verdict for each target."""

import platform
from collections.abc import Sequence
from dataclasses import dataclass

import psutil

from scripts.toolkit.load import wrk
from scripts.toolkit.load.levels import Level
from scripts.toolkit.reports.text import format_table

TARGETS = {8: 0.95, 32: 0.95, 128: 0.95}  # async, one API process: tickets/s ÷ the physical limit
# Where the CPU binds, the API is judged against apps measured in the same run, not against the limit: how far one
# core's worth of Python gets depends on the hour of the machine. The CPU is judged over the simulator's in the same
# windows: it does the same work for every app, so a change of the machine's pace between windows cancels out.
CPU_PACED = "CPU per ticket (loop + threads), over the simulator's"
BARE_USERS = 512  # where the API is judged against itself without instruments, on one process and on two
BARE_AT_LEAST, BARE_AT_MOST = 0.97, 1.03  # tickets/s at least, CPU per ticket at most, of the bare API's
# The reference is the plain app (psycopg_pool's defaults): where the CPU binds, at 512 users, the API's tickets/s at
# least 0.95 of its, its CPU per ticket at most 1.10 of its; at 256 users, below the wall, its tickets/s at least 0.97
# and its /health p99 at most 1.5 of its (the CPU there is reported, not judged: it does not bind).
REFERENCE_AT_LEAST = {256: 0.97, 512: 0.95}  # users: tickets/s
REFERENCE_CPU_USERS, REFERENCE_AT_MOST = 512, 1.10
HEALTH_USERS, HEALTH_AT_MOST = 256, 1.5  # /health p99 at most, of the reference's
WRK_AGREEMENT = {256: 0.05, 512: 0.10}  # users: how far wrk's fraction of the limit may lie from the bench's
SHARES_USERS = 512  # where py-spy tells each instrument's share of the API's CPU
GENERATOR_SHARE, GENERATOR_USERS = 0.10, 512  # the generator's CPU per ticket, at most this share of the API's


@dataclass(frozen=True)
class Verdict:
    """One target: what it asks, whether it holds, and the figure measured; an aim is reported, and fails nothing."""

    target: str
    passed: bool
    measured: str
    aim: bool = False

    def line(self) -> str:
        """`PASS  what: figure` (an aim: `AIM MET  what: figure`), as the reports print it."""
        word = ("AIM MET" if self.passed else "AIM MISSED") if self.aim else ("PASS" if self.passed else "FAIL")
        return f"  {word}  {self.target}: {self.measured}"


def all_passed(verdicts: list[Verdict]) -> bool:
    """Whether every target holds (aims aside): a command's exit code 0."""
    return all(verdict.passed for verdict in verdicts if not verdict.aim)


def beside(lab: Level, other: Level) -> dict[str, tuple[float, float]]:
    """The figures the API is judged on beside another app: name -> (the API's, the other's)."""
    return {
        "tickets/s": (lab.tickets_per_s, other.tickets_per_s),
        "CPU per ticket (loop + threads)": (lab.api_cpu_ms_per_ticket, other.api_cpu_ms_per_ticket),
        CPU_PACED: (lab.api_cpu_per_simulator_cpu, other.api_cpu_per_simulator_cpu),
        "/health p99": (lab.health_p99_ms, other.health_p99_ms),
    }


def pairs(levels: list[Level], app: str) -> list[tuple[Level, Level]]:
    """(the API's level, `app`'s) at each users and number of processes where both ran, from the bench's generator."""
    ours = {(lv.users, lv.api_processes): lv for lv in levels if lv.app == "lab" and lv.generator == "bench"}
    theirs = [lv for lv in levels if lv.app == app]
    return [(ours[lv.users, lv.api_processes], lv) for lv in theirs if (lv.users, lv.api_processes) in ours]


def judged(levels: list[Level]) -> list[Verdict]:
    """A verdict for each target, at the levels that ran."""
    ours = {
        lv.users: lv
        for lv in levels
        if (lv.generator, lv.mode, lv.api_processes, lv.app) == ("bench", "async", 1, "lab")
    }
    verdicts = [
        Verdict(
            f"{users} users >= {share:.0%} of the limit", ours[users].fraction >= share, f"{ours[users].fraction:.1%}"
        )
        for users, share in TARGETS.items()
        if users in ours
    ]
    for lab, bare in pairs(levels, "bare"):
        if lab.users == BARE_USERS:
            verdicts += ratios(
                lab, bare, f"the bare API's, {lab.api_processes} process(es)", BARE_AT_LEAST, BARE_AT_MOST
            )
    for lab, reference in pairs(levels, "reference"):
        if lab.users in REFERENCE_AT_LEAST:
            at_most = REFERENCE_AT_MOST if lab.users == REFERENCE_CPU_USERS else None
            verdicts += ratios(lab, reference, "the reference's", REFERENCE_AT_LEAST[lab.users], at_most)
            if lab.users == HEALTH_USERS:
                ratio = lab.health_p99_ms / reference.health_p99_ms
                what = f"/health p99 at {lab.users} users <= {HEALTH_AT_MOST} x the reference's"
                verdicts.append(Verdict(what, ratio <= HEALTH_AT_MOST, f"{ratio:.2f}"))
    if GENERATOR_USERS in ours:
        share = ours[GENERATOR_USERS].generator_share
        what = f"the generator's CPU per ticket at {GENERATOR_USERS} users <= {GENERATOR_SHARE:.0%} of the API's"
        verdicts.append(Verdict(what, share <= GENERATOR_SHARE, f"{share:.1%}"))
    for check in (lv for lv in levels if lv.generator == "wrk" and lv.users in WRK_AGREEMENT):
        gap = abs(check.bench_fraction - check.fraction) / check.fraction
        what = f"wrk and the bench agree within {WRK_AGREEMENT[check.users]:.0%} at {check.users} users"
        verdicts.append(Verdict(what, gap <= WRK_AGREEMENT[check.users], f"{gap:.1%} apart"))
    return verdicts


def ratios(lab: Level, other: Level, whose: str, at_least: float, at_most: float | None) -> list[Verdict]:
    """The API's tickets/s at least, and its CPU per ticket (over the simulator's) at most, so many times `whose`."""
    speed = lab.tickets_per_s / other.tickets_per_s
    cpu = lab.api_cpu_per_simulator_cpu / other.api_cpu_per_simulator_cpu
    at = f"at {lab.users} users"
    judged = [Verdict(f"tickets/s {at} >= {at_least} x {whose}", speed >= at_least, f"{speed:.3f}")]
    if at_most is not None:
        judged.append(Verdict(f"{CPU_PACED} {at} <= {at_most} x {whose}", cpu <= at_most, f"{cpu:.3f}"))
    return judged


def render(
    levels: list[Level],
    recorded_ms: dict[str, float],
    alone: tuple[float, float],
    loop: str,
    pace: list[float],
    verdicts: list[Verdict],
    options: dict[str, tuple[Level, Level]],
    shares: dict[str, float],
    bare_off: list[str],
) -> str:
    """Every section of the report, then the targets."""
    sections = [
        levels_section(levels, recorded_ms, alone, loop),
        beside_section(levels, bare_off),
        shares_section(shares),
        options_section(options),
        "the machine's pace (a fixed piece of Python work, the fastest of 7 rounds, ms of CPU; lower is faster): "
        + ", ".join(f"{ms:.1f}" for ms in pace)
        + " (before and after the levels); absolute figures hold for this machine in this hour only",
        wrk_section(levels),
        "\n".join(["targets:", *(verdict.line() for verdict in verdicts)]),
    ]
    return "\n\n".join(section for section in sections if section)


def levels_section(levels: list[Level], recorded_ms: dict[str, float], alone: tuple[float, float], loop: str) -> str:
    """The limit, one line; the table of the bench generator's levels; the CPU each process spent per ticket."""
    bench = [lv for lv in levels if lv.generator == "bench"]
    parts = " + ".join(f"{op} {ms:,.1f}" for op, ms in recorded_ms.items())
    head = ["mode", "users", "API procs", "tickets", "tickets/s", "limit", "of limit", "±", "p50 ms", "p95 ms"]
    cpu_head = ["mode", "users", "API procs", *levels[0].cpu_ms_per_ticket, "all", "generator ÷ API"]
    return "\n".join(
        [
            f"event loop: {loop}; limit = users ÷ T, T = {sum(recorded_ms.values()):,.1f} ms, the recording's mean AI "
            f"time per ticket ({parts} ms); one ticket alone (2 users): "
            f"{alone[0] * 1000:,.0f} ± {alone[1] * 1000:.0f} ms",
            "",
            format_table(
                head + ["/health p99 ms", "failed"],
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
                cpu_head,
                [
                    [name(lv), lv.users, lv.api_processes, *(f"{ms:.2f}" for ms in lv.cpu_ms_per_ticket.values())]
                    + [f"{sum(lv.cpu_ms_per_ticket.values()):.2f}", f"{lv.generator_share:.1%}"]
                    for lv in bench
                ],
            ),
        ]
    )


def beside_section(levels: list[Level], bare_off: list[str]) -> str:
    """The API beside itself without (some of its) instruments, and beside the reference app, each in turn with it."""
    off = ", ".join(bare_off)
    lines = []
    for app, says in {
        "bare": f"the API beside itself without instruments (the same routes, modes and I/O; off: {off})",
        "reference": "the API beside the reference (scripts/reference_api.py: a ticket's same I/O, nothing else)",
    }.items():
        rows = [(f"{lab.users} x{lab.api_processes}", lab, other) for lab, other in pairs(levels, app)]
        if rows:
            lines += [f"{says}, in turn on the same generator and simulator (users x API processes):"]
            lines += ["", side_by_side("users", "API", rows, app), ""]
    if lines:
        lines.append(
            "CPU ms per ticket of the API's processes (loop + threads), and that over the simulator's CPU per ticket "
            "in the same windows (the same work for every app: the machine's pace cancels out)"
        )
    return "\n".join(lines)


def shares_section(shares: dict[str, float]) -> str:
    """Each instrument's share of the API's CPU, from py-spy's samples."""
    if not shares:
        return ""
    rows = [[f"ticket_api/instruments/{module}.py", f"{share:.1%}"] for module, share in shares.items() if share]
    total = sum(shares.values())
    return "\n".join(
        [
            f"each instrument's share of the API's CPU at {SHARES_USERS} users, one process (py-spy's samples whose",
            "innermost frame of the project's code is the instrument's, the library calls it makes included, what it",
            "hands on not):",
            "",
            format_table(["instrument", "share"], [*rows, ["all", f"{total:.1%}"]]),
        ]
    )


def options_section(options: dict[str, tuple[Level, Level]]) -> str:
    """The reference's public options, each measured in turn with the reference as it is."""
    if not options:
        return ""
    return "\n".join(
        [
            f"public options of the stack, each measured in turn with the reference as it is ({len(options)} pairs of",
            "processes, the same generator and simulator); option ÷ ref below 1 is what the option saves:",
            "",
            side_by_side("option", "option", [(name, *pair) for name, pair in options.items()], "ref"),
        ]
    )


def wrk_section(levels: list[Level]) -> str:
    """wrk beside the bench's own generator, at the levels wrk drove."""
    checks = [lv for lv in levels if lv.generator == "wrk"]
    if not checks:
        return "" if wrk.available() else "wrk is not installed (Debian's package wrk): no outside check of the bench"
    head = ["users", "bench of limit", "wrk of limit", "±", "wrk tickets/s", "wrk p50 ms", "/health p99 ms", "failed"]
    return "\n".join(
        [
            "wrk beside the bench (async, one API process; wrk: one thread, the same ramp, the same tickets; in turn:",
            "bench, wrk, wrk, bench, each generator's two windows pooled):",
            "",
            format_table(
                head,
                [
                    [lv.users, f"{lv.bench_fraction:.1%}", f"{lv.fraction:.1%}", f"{lv.fraction_error:.1%}"]
                    + [f"{lv.tickets_per_s:.2f}", f"{lv.p50_ms:,.0f}", f"{lv.health_p99_ms:.1f}", lv.failed]
                    for lv in checks
                ],
            ),
        ]
    )


def side_by_side(first: str, ours: str, rows: Sequence[tuple[object, Level, Level]], theirs: str) -> str:
    """A table of (label, ours, theirs): each figure `beside` gives, both apps and their ratio."""
    short = ["tickets/s", "CPU ms", "CPU ÷ simulator's", "/health p99 ms"]
    headers = [first] + [head for figure in short for head in (f"{figure} {ours}", theirs, f"{ours} ÷ {theirs}")]
    return format_table(
        headers,
        [
            [label]
            + [
                f"{figure:.2f}"
                for our_figure, their_figure in beside(mine, other).values()
                for figure in (our_figure, their_figure, our_figure / their_figure)
            ]
            for label, mine, other in rows
        ],
    )


def name(level: Level) -> str:
    """A level's first column: its INTAKE_MODE, or the app beside the API."""
    return level.mode if level.app == "lab" else level.app


def machine() -> str:
    """One line about this machine."""
    return (
        f"{platform.system()} {platform.machine()}, {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}"
    )
