"""Apps measured in turn at one level, in one order and back each round (A, B, C, C, B, A), so that a drift of the
machine's pace over the windows weighs on all alike; each app's windows pooled into one level (scripts.bench); one
API process against two (scripts.kitchens)."""

import functools
import statistics
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from scripts.toolkit.cli import progress
from scripts.toolkit.load.levels import Level, measure, window_s
from scripts.toolkit.measure.cpu import processes_by_role
from scripts.toolkit.running.apis import api, started
from scripts.toolkit.running.stack import Stack
from scripts.toolkit.services import Service

Window = Callable[..., Level]  # (url, roles, app=...) -> one measured window of a level
REFERENCE_APP = "scripts.reference_api:app"  # a ticket's same I/O through the same libraries, and nothing else
JUDGED_USERS = 512  # where the API on two processes is judged against the reference on two
JUDGED_ROUNDS = 2  # rounds of (API, reference, reference, API) there: one round's windows differ by a tenth


def in_turn(windows: Sequence[Callable[[], Level]], rounds: int, first: Level | None = None) -> list[Level]:
    """Each app's windows in turn, in one order and back each round (two apps: A, B, B, A), each app's pooled into
    one level, in the order given. `first`: the first app's first window, measured already."""
    measured: list[list[Level]] = [[] for _ in windows]
    order = [*range(len(windows)), *reversed(range(len(windows)))]
    for round_number in range(rounds):
        for position, app in enumerate(order):
            taken = first if round_number == position == 0 and first is not None else None
            measured[app].append(taken or windows[app]())
    return [pooled(each) for each in measured]


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
            with_option, without = in_turn(
                [
                    functools.partial(window, optioned.url, processes_by_role(optioned.pid, simulator_pid), app=option),
                    functools.partial(window, plain.url, processes_by_role(plain.pid, simulator_pid), app="reference"),
                ],
                rounds=1,
            )
            measured[option] = (with_option, without)
    return measured


def one_against_two(stack: Stack, users: list[int], duration_s: float, ticket_s: float, log_dir: Path) -> dict:
    """Async intake on one API process and on two, in turn at each level (1, 2, 2, 1): {"levels": [...]}; at
    JUDGED_USERS, also the API on two in turn with the reference app on two, JUDGED_ROUNDS rounds: {"judged": (ours,
    the reference's)}.

    One simulator for all three apps; each process's CPU (every worker's) is counted over its windows.
    """
    measured: dict = {"levels": []}
    with stack.api("async") as one:
        provider, env = stack.provider_url, {"INTAKE_MODE": "async", "DATABASE_URL": stack.dsn}
        two_app = api(provider, env=env, workers=2, log_dir=log_dir / "async-2-workers")
        reference_app = api(provider, env=env, workers=2, log_dir=log_dir / "reference-2-workers", app=REFERENCE_APP)
        with started(two_app) as two, started(reference_app) as reference:
            for count in users:
                window = functools.partial(measure, "async", count, window_s(duration_s, count, ticket_s), ticket_s)
                on_one = functools.partial(window, one.url, processes_by_role(one.pid, stack.simulator.pid))
                on_two = functools.partial(
                    window, two.url, processes_by_role(two.pid, stack.simulator.pid), api_processes=2
                )
                measured["levels"] += in_turn([on_one, on_two], rounds=1)
                if count == JUDGED_USERS:
                    roles = processes_by_role(reference.pid, stack.simulator.pid)
                    theirs = functools.partial(window, reference.url, roles, api_processes=2, app="reference")
                    measured["judged"] = tuple(in_turn([on_two, theirs], rounds=JUDGED_ROUNDS))
    return measured
