"""Two apps measured in turn at one level, (ours, theirs, theirs, ours) each round, so that a drift of the machine's
pace over the windows weighs on both alike; each app's windows pooled into one level (scripts.bench)."""

import functools
import statistics
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from scripts.toolkit.cli import progress
from scripts.toolkit.load.levels import Level
from scripts.toolkit.measure.cpu import processes_by_role
from scripts.toolkit.running.services import Service, started

Window = Callable[..., Level]  # (url, roles, app=...) -> one measured window of a level


def in_turn(
    ours: Callable[[], Level], theirs: Callable[[], Level], rounds: int, first: Level | None = None
) -> tuple[Level, Level]:
    """Two apps' windows in turn, (ours, theirs, theirs, ours) each round, each app's pooled. `first`: our first
    window, measured already."""
    mine: list[Level] = []
    others: list[Level] = []
    for round_number in range(rounds):
        mine.append(first if round_number == 0 and first is not None else ours())
        others += [theirs(), theirs()]
        mine.append(ours())
    return pooled(mine), pooled(others)


def pooled(windows: list[Level]) -> Level:
    """Windows of one app at one level, taken in turn with another's, as one: tickets summed, the rest averaged."""

    def mean(figure: str) -> float:
        return statistics.fmean(getattr(window, figure) for window in windows)

    return replace(
        windows[0],
        tickets=sum(window.tickets for window in windows),
        failed=sum(window.failed for window in windows),
        mean_error_ms=sum(window.mean_error_ms**2 for window in windows) ** 0.5 / len(windows),
        mean_ms=mean("mean_ms"),
        p50_ms=mean("p50_ms"),
        p95_ms=mean("p95_ms"),
        health_p99_ms=mean("health_p99_ms"),
        counted_per_s=mean("counted_per_s"),
        cpu_ms_per_ticket={
            role: statistics.fmean(w.cpu_ms_per_ticket[role] for w in windows) for role in windows[0].cpu_ms_per_ticket
        },
    )


def options_in_turn(
    options: dict[str, str], reference: Callable[..., Service], window: Window, simulator_pid: int, log_dir: Path
) -> dict[str, tuple[Level, Level]]:
    """Each option of the reference app (REFERENCE_OPTION) in turn with the reference as it is, one at a time, one
    round each: they are judged over the simulator's CPU, where one round's drift cancels out."""
    measured = {}
    for option, says in options.items():
        plain_app = reference(log_dir=log_dir / "reference")
        optioned_app = reference(log_dir=log_dir / option, option=option)
        with started(plain_app) as plain, started(optioned_app) as optioned:
            progress(f"option {option}: {says}")
            measured[option] = in_turn(
                functools.partial(window, optioned.url, processes_by_role(optioned.pid, simulator_pid), app=option),
                functools.partial(window, plain.url, processes_by_role(plain.pid, simulator_pid), app="reference"),
                rounds=1,
            )
    return measured
