"""`python -m scripts.stall`: the course's two lines, its figures, and the stall it shows in blocking mode."""

import asyncio
import json
import random
import re

import httpx
import pytest

from scripts.stall import measure_stall, median_pass, render, send_ticket, server_timing, waited_share
from scripts.toolkit import dataset
from scripts.toolkit.answers import error_code
from scripts.toolkit.dataset import random_ticket
from tests.fakes import FakeProvider
from tests.lab.tools.commands import run_module
from ticket_api.errors import ProviderBusy

CALL_S = 0.05  # the fake provider's time per call: a ticket's AI work is 3 calls
TWO_LINES = re.compile(
    r"8 tickets, 4 at a time: \d+\.\d s, status codes \[201\]\n"
    r"GET /health during that time: \d+ answers, median \d+\.\d ms, slowest \d+\.\d ms\n"
)


def a_result(**changes) -> dict:
    """A stall result as measure_stall returns it, with the course's figures."""
    runs = [{"ticket": n, "status": 201, "error": None} for n in range(1, 9)]
    result = {
        "tickets": 8,
        "concurrency": 4,
        "total_s": 18.8234,
        "statuses": [201],
        "ticket_runs": runs,
        "health_answers": 3,
        "health_median_ms": 8737.24,
        "health_slowest_ms": 9824.66,
        "health_waited_share": 0.99,
    }
    return {**result, **changes}


def test_the_report_is_the_courses_two_lines():
    assert render(a_result()) == (
        "8 tickets, 4 at a time: 18.8 s, status codes [201]\n"
        "GET /health during that time: 3 answers, median 8737.2 ms, slowest 9824.7 ms"
    )


def test_the_report_lists_every_status_and_the_tickets_without_an_answer():
    runs = [{"status": 201}, {"status": 503}, {"status": None}]
    text = render(a_result(statuses=[201, 503], ticket_runs=runs, health_answers=0))
    assert text.splitlines() == [
        "8 tickets, 4 at a time: 18.8 s, status codes [201, 503], 1 without an answer",
        "GET /health during that time: 0 answers",
    ]


def test_the_median_pass_takes_each_figures_median_and_every_status():
    passes = [
        a_result(total_s=19.3, health_answers=3, health_median_ms=9370.0, health_slowest_ms=9750.0),
        a_result(
            total_s=17.7,
            health_answers=4,
            health_median_ms=4686.0,
            health_slowest_ms=7990.0,
            health_waited_share=0.98,
            statuses=[201, 503],
        ),
        a_result(total_s=18.1, health_answers=3, health_median_ms=8384.0, health_slowest_ms=9485.0),
    ]
    median = median_pass(passes)
    assert (median["total_s"], median["health_answers"], median["health_median_ms"]) == (18.1, 3, 8384.0)
    assert median["health_slowest_ms"] == 9485.0 and median["statuses"] == [201, 503]
    assert median["health_waited_share"] == 0.99
    assert median_pass([a_result(health_answers=0, health_median_ms=None)])["health_median_ms"] is None


def test_the_waited_share_counts_each_probe_until_the_run_ends():
    probes = [{"start_s": 0.0, "ms": 500.0}, {"start_s": 0.6, "ms": 2.0}, {"start_s": 0.9, "ms": 800.0}]
    assert waited_share(probes, 1.0) == pytest.approx(0.5 + 0.002 + 0.1)


def test_random_tickets_are_known_customers_with_varied_texts_and_follow_the_seed():
    tickets = [random_ticket(random.Random(7)) for _ in range(3)]
    assert tickets[0] == tickets[1] == tickets[2]
    rng = random.Random(1)
    many = [random_ticket(rng) for _ in range(50)]
    assert all(ticket["customer_id"] in dataset.KNOWN_CUSTOMER_IDS for ticket in many)
    assert len({ticket["subject"] for ticket in many}) > 25
    assert len({ticket["body"] for ticket in many}) > 40
    assert all(ticket["subject"] in ticket["body"] or ticket["subject"][1:] in ticket["body"] for ticket in many)


def test_the_error_code_and_the_provider_time_come_from_the_answer():
    busy = httpx.Response(503, json={"error": "ai_busy", "detail": "quota"})
    created = httpx.Response(201, json={}, headers={"Server-Timing": "db;dur=9.5, ai;dur=2210.4, total;dur=2227.0"})
    assert error_code(busy) == "ai_busy"
    assert error_code(httpx.Response(500, text="oops")) == "http_500"
    assert error_code(created) is None
    assert server_timing(created).get("ai") == 2210.4
    assert server_timing(busy).get("ai") is None


class RecordingTransport(httpx.AsyncBaseTransport):
    """Answers 201 with the ticket it read; records when it had each request's headers and body.

    `refuse` tickets fail as a refused connection would: before anything is sent.
    """

    def __init__(self, refuse: int = 0):
        self.refuse, self.seen, self.events = refuse, 0, []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.seen += 1
        if self.seen <= self.refuse:
            raise httpx.ConnectError("connection refused", request=request)
        self.events.append("headers")
        body = await request.aread()
        self.events.append("body")
        return httpx.Response(201, json=json.loads(body))


def send_group(transport: RecordingTransport, size: int) -> list[dict]:
    """Send `size` tickets as scripts.stall sends a group; each one's outcome."""

    async def group() -> list[dict]:
        together = asyncio.Barrier(size)
        async with httpx.AsyncClient(transport=transport, base_url="http://api") as client:
            tickets = [random_ticket(random.Random(number)) for number in range(size)]
            sent = asyncio.gather(*(send_ticket(client, n, ticket, 0.0, together) for n, ticket in enumerate(tickets)))
            return await asyncio.wait_for(sent, 10)

    return asyncio.run(group())


def test_a_group_sends_every_body_once_every_ticket_has_sent_its_headers():
    transport = RecordingTransport()
    runs = send_group(transport, 4)
    assert [run["status"] for run in runs] == [201] * 4
    assert transport.events == ["headers"] * 4 + ["body"] * 4


def test_a_ticket_that_cannot_be_sent_does_not_hold_back_the_rest_of_its_group():
    runs = send_group(RecordingTransport(refuse=1), 3)
    assert [(run["status"], run["error"]) for run in runs] == [(None, "ConnectError"), (201, None), (201, None)]


def stall_in(served_api, mode: str) -> dict:
    """One stall run against the API in `mode`, with a provider that takes CALL_S a call."""
    with served_api(mode, FakeProvider(CALL_S)) as url:
        return asyncio.run(measure_stall(url, interval_s=0.02, seed=1))


@pytest.mark.timing
def test_blocking_mode_stalls_health_and_serializes_the_tickets(served_api):
    blocking, free = stall_in(served_api, "blocking"), stall_in(served_api, "async")
    assert blocking["statuses"] == free["statuses"] == [201]
    assert len(blocking["ticket_runs"]) == 8 and len(blocking["probes"]) == blocking["health_answers"] >= 2
    assert blocking["total_s"] > 6 * 3 * CALL_S  # 8 tickets' AI work one after another, not 2 rounds of 4
    assert free["total_s"] < 0.5 * blocking["total_s"]
    assert free["health_answers"] >= 5
    # Whatever order the API read the tickets and the probes in, a probe that does no work waited for
    # more than two provider calls of other requests, and /health was kept waiting for most of the run.
    # (Which probe waits how long depends on that order: the lesson's shape is checked at speed 1.)
    # (Async mode: slowest 4-50 ms, waiting 12-26% of the run; blocking: 587-627 ms, 90-96%, in 30 runs each.)
    assert blocking["health_slowest_ms"] > 2 * CALL_S * 1000
    assert blocking["health_waited_share"] > 0.6
    assert free["health_median_ms"] < 0.5 * CALL_S * 1000
    assert all(run["ai_ms"] >= 3 * CALL_S * 1000 * 0.9 for run in free["ticket_runs"])


def test_the_command_prints_two_lines_and_its_json_holds_every_figure(served_api, tmp_path):
    with served_api("async", FakeProvider(CALL_S)) as url:
        result = run_module("scripts.stall", "--url", url)
        as_json = run_module("scripts.stall", "--url", url, "--json", "--tickets", "3", "--concurrency", "2")
    assert result.returncode == 0, result.stderr
    assert TWO_LINES.fullmatch(result.stdout)
    figures = json.loads(as_json.stdout)
    assert figures["statuses"] == [201] and figures["tickets"] == 3 and figures["concurrency"] == 2
    assert [run["ticket"] for run in figures["ticket_runs"]] == [1, 2, 3]
    assert all(run["end_s"] > run["start_s"] and run["provider_calls"] == [] for run in figures["ticket_runs"])
    assert all(set(probe) == {"start_s", "ms"} for probe in figures["probes"])


def test_passes_print_each_pass_then_the_median_and_the_json_holds_them_all(served_api):
    with served_api("async", FakeProvider(0.01)) as url:
        result = run_module("scripts.stall", "--url", url, "--passes", "2", "--tickets", "2", "--concurrency", "2")
        as_json = run_module("scripts.stall", "--url", url, "--passes", "2", "--tickets", "2", "--json")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [lines[0], lines[3], lines[6]] == [
        "pass 1 of 2",
        "pass 2 of 2",
        "median of 2 passes, each figure on its own",
    ]
    assert all(line.startswith("2 tickets, 2 at a time: ") for line in (lines[1], lines[4], lines[7]))
    assert all(line.startswith("GET /health during that time: ") for line in (lines[2], lines[5], lines[8]))
    figures = json.loads(as_json.stdout)
    assert len(figures["passes"]) == 2 and figures["median"]["statuses"] == [201]
    assert figures["median"]["health_answers"] == median_pass(figures["passes"])["health_answers"]


def test_a_spent_quota_is_explained_after_the_two_lines(served_api):
    with served_api("async", FakeProvider(0.01, error=ProviderBusy("quota spent", retry_after=30))) as url:
        result = run_module("scripts.stall", "--url", url)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].endswith("status codes [503]")
    assert "quota" in result.stderr and "python -m simulator --quota 0" in result.stderr
    assert "/admin/quota" in result.stderr


def test_an_api_that_is_not_running_is_one_line_and_exit_2():
    result = run_module("scripts.stall", "--url", "http://127.0.0.1:9")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith("error: cannot reach the API at http://127.0.0.1:9")
