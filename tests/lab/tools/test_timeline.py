"""The stall timeline from the run's own data: the API's X-Provider-Calls, placed by scripts.stall, drawn by compare."""

import json

import httpx
import pytest

from scripts.stall import provider_calls, server_timing
from scripts.toolkit import services
from scripts.toolkit.reports.charts import draw_timeline
from scripts.toolkit.running.stack import MODES
from tests.fakes import FakeProvider
from tests.lab.tools.commands import run_module

TICKET = {"customer_id": 1, "subject": "Parcel 51 has not arrived", "body": "It was due on Monday."}


@pytest.fixture(scope="module")
def provider_url():
    """The simulator at a fifth of the course's delays (classify ~180 ms, draft ~220 ms, embed ~40 ms), quota off."""
    with services.simulator(speed=0.2, quota=0) as simulator:
        yield f"{simulator.url}/v1"


@pytest.mark.timing
@pytest.mark.parametrize("mode", MODES)
def test_a_new_ticket_reports_its_three_provider_calls_in_order_within_its_time(served_api, provider_url, mode):
    with served_api(mode, provider_url=provider_url) as url:
        created = httpx.post(f"{url}/v1/tickets", json=TICKET, timeout=30)
        unknown_customer = httpx.post(f"{url}/v1/tickets", json={**TICKET, "customer_id": 987_654}, timeout=30)
        health = httpx.get(f"{url}/health")
    assert created.status_code == 201, created.text
    calls, timing = provider_calls(created), server_timing(created)
    assert len(calls) == 3 and all(end > start for start, end in calls)
    edges = [0.0, *(ms for call in calls for ms in call), timing["total"]]
    assert edges == sorted(edges)  # one call after the other, all inside the API's time for the request
    with_provider_ms = sum(end - start for start, end in calls)
    assert 0.9 * timing["ai"] < with_provider_ms <= timing["ai"] + 0.5  # the `ai` bucket is these three calls
    assert unknown_customer.status_code == 404 and "x-provider-calls" not in unknown_customer.headers
    assert "x-provider-calls" not in health.headers


def with_the_provider_at_once(result: dict) -> float:
    """How many tickets had a provider call under way at once, on average while any had: sum ÷ union of the calls."""
    calls = sorted(call for ticket in result["ticket_runs"] for call in ticket["provider_calls"])
    covered_s, covered_until = 0.0, float("-inf")
    for start, end in calls:
        covered_s += max(0.0, end - max(start, covered_until))
        covered_until = max(covered_until, end)
    return sum(end - start for start, end in calls) / covered_s


def stall(url: str, tickets: int) -> dict:
    """`python -m scripts.stall` with `tickets` tickets, all at once: its --json figures."""
    counts = ["--tickets", str(tickets), "--concurrency", str(tickets)]
    result = run_module("scripts.stall", "--url", url, *counts, "--interval", "0.05", "--seed", "4", "--json")
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def four_tickets_at_once(served_api, provider_url: str, mode: str, tickets: int = 4) -> dict:
    """scripts.stall's run of `tickets` tickets, all at once, against the API in `mode`."""
    with served_api(mode, provider_url=provider_url) as url:
        return stall(url, tickets)


@pytest.mark.timing
def test_blocking_mode_calls_the_provider_for_one_ticket_at_a_time_async_and_thread_for_all(served_api, provider_url):
    results = {mode: four_tickets_at_once(served_api, provider_url, mode) for mode in MODES}
    for result in results.values():
        assert result["statuses"] == [201]
        for ticket in result["ticket_runs"]:
            calls = ticket["provider_calls"]
            assert len(calls) == 3
            assert ticket["start_s"] < calls[0][0] < calls[-1][1] < ticket["end_s"]  # inside the ticket's own bar
    assert with_the_provider_at_once(results["blocking"]) < 1.1
    assert with_the_provider_at_once(results["async"]) > 2.5
    assert with_the_provider_at_once(results["thread"]) > 2.5


def test_the_timeline_draws_each_tickets_calls_over_its_wait(served_api, provider_url, tmp_path):
    result = four_tickets_at_once(served_api, provider_url, "blocking", tickets=2)
    draw_timeline(result, str(tmp_path / "timeline.svg"), "2 tickets at once, and GET /health")
    svg = (tmp_path / "timeline.svg").read_text()
    assert all(f'id="ticket-{n}"' in svg for n in (1, 2))
    assert all(f'id="ticket-{n}-call-{k}"' in svg for n in (1, 2) for k in (1, 2, 3))
    assert 'id="ticket-1-call-4"' not in svg
    assert "provider: classify" in svg and "waiting for the server" in svg and "GET /health" in svg
    assert "without X-Provider-Calls" not in svg


def test_an_answer_without_provider_calls_is_drawn_as_such_and_none_are_made_up(served_api, tmp_path):
    # A fake provider makes no HTTP call, so the API reports no provider calls and the chart makes none up.
    with served_api("async", FakeProvider(0.05)) as url:
        result = stall(url, 2)
    draw_timeline(result, str(tmp_path / "timeline.svg"), "2 tickets at once, and GET /health")
    svg = (tmp_path / "timeline.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "ticket 2" in svg
    assert "answer without X-Provider-Calls" in svg
