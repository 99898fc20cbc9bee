"""scripts.kitchens: one API process against two. Its judgement at 512 users against the reference on two, the
provider calls it counts as in flight at once, and a short CPU part on the experiment app, wrk beside the lab's
own generator, each worker's share read from its CPU and its connections."""

from dataclasses import replace

import pytest

from scripts.kitchens import GENERATORS, cpu_rows
from scripts.toolkit.commands.options import Clock
from scripts.toolkit.load import wrk
from scripts.toolkit.load.levels import Level
from scripts.toolkit.measure.quantiles import most_at_once
from scripts.toolkit.reports.kitchens_report import render, verdicts
from tests.lab.tools.test_bench import level


def on_two(app: str, mean_ms: float, cpu_ms: float) -> Level:
    """A 512-user level of `app` on two processes, a ticket taking `mean_ms`."""
    return replace(level(app, mean_ms, cpu_ms, 30.0), users=512, api_processes=2, limit=512 / 2.2)


@pytest.mark.parametrize(
    ("api", "reference", "outcomes"),
    [
        (on_two("lab", 2250, 9.9), on_two("reference", 2250, 10.0), [(True, False), (True, True)]),
        # Both short of 95% of the limit (the machine is the wall): the API is judged against the reference.
        (on_two("lab", 2450, 10.5), on_two("reference", 2430, 10.0), [(True, False), (False, True)]),
        (on_two("lab", 2650, 9.0), on_two("reference", 2450, 10.0), [(False, False), (True, True)]),
        # The reference reaches the limit: so must the API.
        (on_two("lab", 2400, 9.0), on_two("reference", 2300, 10.0), [(False, False), (True, True)]),
    ],
)
def test_at_512_users_two_processes_are_judged_on_the_limit_or_beside_the_reference_on_two(api, reference, outcomes):
    judged = verdicts({"levels": [], "judged": (api, reference)})
    assert [(verdict.passed, verdict.aim) for verdict in judged] == outcomes  # an aim is told, and fails nothing
    assert "AIM" in render({"ticket_s": 2.2, "io": {"levels": [api], "judged": (api, reference)}})
    assert verdicts({"levels": [api]}) == []  # no judged level ran: nothing to judge


def test_calls_in_flight_at_once_ignore_the_clocks_slack_between_one_call_and_the_next():
    one_after_another = [[0.0, 1.0], [0.98, 2.0], [1.99, 3.0]]  # placed a few ms apart on our clock
    assert most_at_once(one_after_another) == 1
    assert most_at_once([[0.0, 1.0], [0.5, 1.5], [0.6, 2.0], [3.0, 4.0]]) == 3


@pytest.mark.skipif(not wrk.available(), reason="wrk is not installed (Debian's package wrk)")
def test_the_cpu_part_reads_each_workers_share_and_connections_on_one_worker_and_on_two():
    rows = cpu_rows(seconds=1, clients=4, clock=Clock())
    assert [(row["workers"], row["generator"]) for row in rows] == [(w, g) for w in (1, 2) for g in GENERATORS]
    for row in rows:
        assert row["failed"] == 0 and row["rps"] > 0
        assert len(row["cpu_shares"]) == len(row["connections"]) == row["workers"]  # uvicorn's workers, no other
        assert sum(row["cpu_shares"]) == pytest.approx(1.0)
        assert 0 <= row["generator_cores"] < row["workers_cores"] + 0.5
    kept = [row for row in rows if row["generator"] != "wrk, new connections"]
    assert all(sum(row["connections"]) == 4 for row in kept)  # each client's one connection, kept alive
