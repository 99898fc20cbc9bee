"""Provider faults in every INTAKE_MODE, and SIGTERM in the middle of work: every answer has the rows it promises.

A 201 has exactly one ticket with its AI results, under the id it answered; any other answer has
no row at all. The soak (`python -m scripts.soak`) checks the same at scale; its test is here too.
"""

import asyncio
import os
import threading
import time
from collections import Counter

import httpx
import pytest

from scripts.toolkit import dataset
from scripts.toolkit.commands.options import Clock
from scripts.toolkit.databases import create_lab_database, drop_database
from scripts.toolkit.measure.rates import read_simulator_stats
from scripts.toolkit.running.stack import MODES
from scripts.toolkit.soak.audit import Journey, check_rows, make_tickets
from scripts.toolkit.soak.faults import send_all
from tests.fakes import FakeProvider
from tests.lab.reliability.reliability_testing import (
    assert_idle,
    assert_rows_match_answer,
    marked_ticket,
    post_all,
    run_short_soak,
    wait_for,
)
from tests.servers import serve
from ticket_api.instruments.connections import connect
from ticket_api.main import create_app

FAULTY = ("--error-rate", "0.1", "--hang-rate", "0.05", "--hang-s", "3", "--seed", "11")
CHAT_QUOTA = 16  # per API key and minute: 8 tickets' worth, so the later ones get 429 (ai_busy)


@pytest.fixture(scope="module")
def faulty_simulator(start_simulator):
    """A fast simulator that fails 10% of calls, hangs 5% for 3 s, and allows 16 chat calls a minute per key."""
    return start_simulator(*FAULTY, speed=0.05, quota=CHAT_QUOTA)


@pytest.mark.parametrize("mode", MODES)
def test_every_answer_under_faults_has_the_rows_its_status_promises(
    make_settings, faulty_simulator, customer_id, db_conn, mode
):
    settings = make_settings(
        intake_mode=mode,
        provider_url=f"{faulty_simulator.url}/v1",
        provider_timeout_s=0.5,
        provider_api_key=f"sk-test-{mode}",
    )  # a key, so a quota, per mode
    tickets = [marked_ticket(customer_id, f"n{number}") for number in range(16)]
    with serve(create_app(settings)) as url:
        answers = post_all(url, tickets, concurrency=4)
        assert_idle(url)
    for ticket, answer in zip(tickets, answers, strict=False):
        assert_rows_match_answer(db_conn, ticket, answer)
    errors = Counter(answer.json()["error"] for answer in answers if answer.status_code != 201)
    assert 0 < len(errors) and sum(errors.values()) < len(tickets), errors
    assert set(errors) <= {"ai_unavailable", "ai_busy", "ai_timeout"}


@pytest.fixture(scope="module")
def slow_simulator(start_simulator):
    """The simulator at speed 0.2: a ticket takes about 0.45 s."""
    return start_simulator(speed=0.2)


def simulator_in_flight(url: str) -> int:
    """The calls the simulator is answering now (its GET /admin/stats)."""
    return read_simulator_stats(httpx.get(f"{url}/admin/stats"))["in_flight"]


@pytest.mark.parametrize("mode", MODES)
def test_sigterm_in_the_middle_of_work_loses_no_ticket(start_api, slow_simulator, customer_id, db_conn, mode):
    api = start_api(f"{slow_simulator.url}/v1", INTAKE_MODE=mode)
    tickets = [marked_ticket(customer_id, f"n{number}") for number in range(6)]
    answers = []
    # The simulator answers whatever the API's loop is doing (a blocked one cannot answer /metrics): the first
    # ticket is under way once it has a call in flight. (Waiting 0.1 s instead lost the race on a loaded machine.)
    wait_for(lambda: simulator_in_flight(slow_simulator.url) == 0, 30, "the last test's calls done")
    sender = threading.Thread(target=lambda: answers.extend(post_all(api.url, tickets, concurrency=6)))
    sender.start()
    wait_for(lambda: simulator_in_flight(slow_simulator.url) >= 1, 30, "the first ticket's call")
    time.sleep(0.1)
    exit_code = api.stop()  # SIGTERM: uvicorn stops accepting and finishes what it has
    sender.join(timeout=60)
    assert exit_code != -9, "the API had to be killed"
    for ticket, answer in zip(tickets, answers, strict=False):
        assert_rows_match_answer(db_conn, ticket, None if isinstance(answer, Exception) else answer)
    created = [answer for answer in answers if not isinstance(answer, Exception) and answer.status_code == 201]
    assert created, answers
    if mode != "blocking":
        # All were read before the SIGTERM, so all are finished. A blocked loop may not have read the last
        # ones yet: uvicorn closes those connections unanswered, and they have no row (checked above).
        assert len(created) == len(tickets)
    assert "Traceback" not in api.log_path.read_text()


def test_the_soak_checks_every_mode_through_a_restart(tmp_path):
    figures, progress = run_short_soak(tmp_path, tickets=24, users=6, modes="thread,blocking,async", quota=30)
    assert figures["violations"] == 0
    assert [run["mode"] for run in figures["runs"]] == ["thread", "blocking", "async"]
    for run in figures["runs"]:
        assert run["sent"] == sum(run["answers"].values()) == 24
        assert run["rows"] == run["complete_rows"] == run["created"] + len(run["saved_without_201"])
        assert run["duplicates"] == 0 and run["violations"] == []
        assert run["restart"]["after_ticket"] == 12 and run["restart"]["exit_code"] != -9
    assert "SIGTERM to the API" in progress
    assert (tmp_path / "logs" / "async-restarted" / "api.log").exists()


def test_the_soak_check_finds_lost_duplicated_and_unanswered_tickets(database_url):
    name = f"lab_soak_check_{os.getpid()}"
    dsn = create_lab_database(database_url, name, dataset.SIZES["small"])
    try:
        tickets = make_tickets(4, "check")
        with connect(dsn) as conn:
            conn.execute("ALTER TABLE tickets DISABLE TRIGGER USER")  # lets rows without AI results in, to be found
            for ticket in (tickets[1], tickets[1], tickets[3]):  # 1 lost, 2 saved twice, 4 saved despite its 503
                conn.execute(
                    "INSERT INTO tickets (customer_id, subject, body) VALUES (1, %s, 'b')", (ticket["subject"],)
                )
        outcomes = [Journey(number, ticket["key"]) for number, ticket in enumerate(tickets, start=1)]
        for outcome in outcomes[:3]:
            outcome.status, outcome.ticket_id = 201, 10**9
        outcomes[3].status, outcomes[3].error = 503, "ai_busy"
        violations = check_rows(dsn, outcomes)["violations"]
    finally:
        drop_database(database_url, name)
    assert any(tickets[0]["key"] in line and "saved as nothing" in line for line in violations), violations
    assert any(tickets[1]["key"] in line and "saved 2 times" in line for line in violations)
    assert any(tickets[2]["key"] in line and "saved as nothing" in line for line in violations)
    assert any(tickets[3]["key"] in line and "answered 503 ai_busy, yet saved" in line for line in violations)
    assert sum("has no AI results" in line for line in violations) == 3


def test_the_soaks_load_restarts_the_api_once_half_have_started_and_keeps_each_journey(make_settings, customer_id):
    tickets = [{"customer_id": customer_id, "subject": f"S{n}", "body": "b", "key": f"journey-{n}"} for n in range(8)]
    restarted = []

    def restart() -> dict:  # the soak's own stops and starts the API; the journeys go on through it
        restarted.append(True)
        return {"stop_s": 0.0, "start_s": 0.0}

    with serve(create_app(make_settings(), FakeProvider(0.05))) as url:
        outcomes, info = asyncio.run(send_all(url, tickets, 4, restart, Clock()))
    assert [outcome.status for outcome in outcomes] == [201] * 8 and all(o.ticket_id for o in outcomes)
    assert restarted == [True] and info["after_ticket"] == 4
    assert info["in_flight"] and {o.number for o in outcomes if o.in_flight_at_restart} == set(info["in_flight"])
