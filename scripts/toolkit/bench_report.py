"""scripts.bench's report: the table of its levels, the CPU each process spent per ticket, wrk beside the bench's own
generator, and a PASS or FAIL for each target."""

import platform

import psutil

from scripts.toolkit import wrk
from scripts.toolkit.cli import format_table
from scripts.toolkit.levels import Level

TARGETS = {8: 0.97, 32: 0.97, 128: 0.95, 256: 0.95}  # async, one API process: tickets/s ÷ the physical limit
HEALTH_P99_TARGET_MS, HEALTH_P99_USERS = 50, 256
WRK_AGREEMENT = {256: 0.05, 512: 0.10}  # users: how far wrk's fraction of the limit may lie from the bench's
GENERATOR_SHARE, GENERATOR_USERS = 0.10, 512  # the generator's CPU per ticket, at most this share of the API's


def by_generator(levels: list[Level]) -> tuple[dict[int, Level], list[Level]]:
    """The bench's own async levels of one API process, by users (what the targets judge), and wrk's."""
    ours = {lv.users: lv for lv in levels if lv.generator == "bench" and lv.mode == "async" and lv.api_processes == 1}
    return ours, [lv for lv in levels if lv.generator == "wrk"]


def report(levels: list[Level], recorded_ms: dict[str, float], alone: tuple[float, float], loop: str) -> str:
    """The table, the CPU per ticket, wrk beside the bench, and the targets."""
    ticket_ms = sum(recorded_ms.values())
    parts = " + ".join(f"{op} {ms:,.1f}" for op, ms in recorded_ms.items())
    lines = [
        f"event loop: {loop}; limit = users ÷ T, T = {ticket_ms:,.1f} ms, the recording's mean AI time per ticket "
        f"({parts} ms); one ticket alone (2 users): {alone[0] * 1000:,.0f} ± {alone[1] * 1000:.0f} ms",
        "",
        format_table(
            ["mode", "users", "API procs", "tickets", "tickets/s", "limit", "of limit", "±", "p50 ms", "p95 ms"]
            + ["/health p99 ms", "failed"],
            [
                [lv.mode, lv.users, lv.api_processes, lv.tickets, f"{lv.tickets_per_s:.2f}", f"{lv.limit:.2f}"]
                + [f"{lv.fraction:.1%}", f"{lv.fraction_error:.1%}", f"{lv.p50_ms:,.0f}", f"{lv.p95_ms:,.0f}"]
                + [f"{lv.health_p99_ms:.1f}", lv.failed]
                for lv in levels
                if lv.generator == "bench"
            ],
        ),
        "",
        "CPU ms per ticket, by process (and the API's by thread), in all, and the generator's share of the API's:",
        "",
        format_table(
            ["mode", "users", "API procs", *levels[0].cpu_ms_per_ticket, "all", "generator ÷ API"],
            [
                [lv.mode, lv.users, lv.api_processes, *(f"{ms:.2f}" for ms in lv.cpu_ms_per_ticket.values())]
                + [f"{sum(lv.cpu_ms_per_ticket.values()):.2f}", f"{lv.generator_share:.1%}"]
                for lv in levels
                if lv.generator == "bench"
            ],
        ),
        "",
    ]
    ours, checks = by_generator(levels)
    if checks:
        lines += [
            "wrk beside the bench (async, one API process; wrk: one thread, the same ramp, the same tickets):",
            "",
            format_table(
                ["users", "bench of limit", "wrk of limit", "±", "wrk tickets/s", "wrk p50 ms", "/health p99 ms"]
                + ["failed"],
                [
                    [lv.users, f"{ours[lv.users].fraction:.1%}" if lv.users in ours else "-", f"{lv.fraction:.1%}"]
                    + [f"{lv.fraction_error:.1%}", f"{lv.tickets_per_s:.2f}", f"{lv.p50_ms:,.0f}"]
                    + [f"{lv.health_p99_ms:.1f}", lv.failed]
                    for lv in checks
                ],
            ),
            "",
        ]
    elif ours and not wrk.available():
        lines += ["wrk is not installed (Debian's package wrk): no outside check of the bench's generator", ""]
    return "\n".join(lines + ["targets:", *verdicts(ours, checks)])


def verdicts(ours: dict[int, Level], checks: list[Level]) -> list[str]:
    """PASS or FAIL for each target, and for wrk's agreement, at the levels that ran."""
    lines = []
    for users, share in TARGETS.items():
        if users in ours:
            lines.append(
                _verdict(
                    f"{users} users >= {share:.0%} of the limit",
                    ours[users].fraction >= share,
                    f"{ours[users].fraction:.1%}",
                )
            )
    if HEALTH_P99_USERS in ours:
        p99 = ours[HEALTH_P99_USERS].health_p99_ms
        lines.append(
            _verdict(
                f"/health p99 at {HEALTH_P99_USERS} users <= {HEALTH_P99_TARGET_MS} ms",
                p99 <= HEALTH_P99_TARGET_MS,
                f"{p99:.1f} ms",
            )
        )
    if GENERATOR_USERS in ours:
        share = ours[GENERATOR_USERS].generator_share
        lines.append(
            _verdict(
                f"the generator's CPU per ticket at {GENERATOR_USERS} users <= {GENERATOR_SHARE:.0%} of the API's",
                share <= GENERATOR_SHARE,
                f"{share:.1%}",
            )
        )
    for check in checks:
        if check.users in ours and check.users in WRK_AGREEMENT:
            gap = abs(ours[check.users].fraction - check.fraction) / check.fraction
            lines.append(
                _verdict(
                    f"wrk and the bench agree within {WRK_AGREEMENT[check.users]:.0%} at {check.users} users",
                    gap <= WRK_AGREEMENT[check.users],
                    f"{gap:.1%} apart",
                )
            )
    return lines


def _verdict(what: str, ok: bool, measured: str) -> str:
    return f"  {'PASS' if ok else 'FAIL'}  {what}: {measured}"


def machine() -> str:
    """One line about this machine."""
    return (
        f"{platform.system()} {platform.machine()}, {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, Python {platform.python_version()}"
    )
