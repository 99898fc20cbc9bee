"""When a dependency fails: a clear answer, nothing half-saved, nothing leaked, and recovery without a restart.

The database is an embedded PostgreSQL of this module's own, in a tmp folder, so it can be stopped
and started again; the provider is a port where nothing listens, or a simulator whose calls hang.
After every failure /metrics must show the thread pool, the DB pool and the provider calls idle.
"""

import os
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import httpx
import psycopg
import pytest

from scripts.toolkit.cli import PROJECT_ROOT
from scripts.toolkit.processes import free_port
from scripts.toolkit.running.stack import MODES
from tests.fakes import FakeProvider
from tests.lab.reliability.reliability_testing import assert_idle, marked_ticket, post_all, rows_of
from tests.servers import serve
from ticket_api.config import load_settings
from ticket_api.instruments.connections import CONNECT_TIMEOUT_S
from ticket_api.instruments.embedded import embedded_dsn, stop_embedded
from ticket_api.main import create_app

RECOVERY_S = 30  # generous: the pool tries a lost connection again within a second or two of the server's return


def own_settings(own_database: SimpleNamespace, **overrides: object):
    """Settings for the API on the module's own database, with short waits."""
    values = {
        "database_url": own_database.dsn,
        "db_pool_min_size": 1,
        "db_pool_timeout_s": 1,
        "log_level": "WARNING",
        **overrides,
    }
    return load_settings(_env_file=None, **values)


def test_the_api_will_not_start_without_its_database():
    port = free_port()
    result = subprocess.run(
        [sys.executable, "-m", "uvicorn", "ticket_api.main:app", "--host", "127.0.0.1", "--port", str(free_port())],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DATABASE_URL": f"postgresql://lab@127.0.0.1:{port}/lab"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    problem = [line for line in output.splitlines() if "PostgreSQL" in line]
    assert len(problem) == 1, output
    assert "cannot connect to PostgreSQL" in problem[0] and f"port={port}" in problem[0]
    assert "Traceback" not in output and 'File "' not in output


@pytest.mark.parametrize(
    ("mode", "pool"), [(mode, True) for mode in MODES] + [("async", False)], ids=[*MODES, "async-without-pool"]
)
def test_a_lost_database_is_503_and_the_api_recovers_without_a_restart(own_database, mode, pool):
    settings = own_settings(own_database, intake_mode=mode, db_pool=pool)
    with serve(create_app(settings, FakeProvider(0.01))) as url, httpx.Client(base_url=url, timeout=30) as client:
        saved = client.post("/v1/tickets", json=marked_ticket(own_database.customer_id))
        assert saved.status_code == 201
        assert stop_embedded(own_database.pgdata)
        try:
            lost = client.post("/v1/tickets", json=marked_ticket(own_database.customer_id))
            unreadable = client.get(f"/v1/tickets/{saved.json()['id']}")
            assert [lost.json()["error"], unreadable.json()["error"]] == ["db_unavailable"] * 2
            assert [lost.status_code, unreadable.status_code] == [503, 503]
            assert client.get("/health").status_code == 200
            assert_idle(url)  # nothing is borrowed or waited for while the database is away
        finally:
            assert embedded_dsn(own_database.pgdata) == own_database.dsn  # the same server, back
        statuses = []
        deadline = time.monotonic() + RECOVERY_S
        while not statuses or statuses[-1] != 201:
            assert time.monotonic() < deadline, f"no recovery within {RECOVERY_S} s: {statuses}"
            statuses.append(client.post("/v1/tickets", json=marked_ticket(own_database.customer_id)).status_code)
        assert set(statuses) <= {503, 201}
        assert client.get(f"/v1/tickets/{saved.json()['id']}").json() == saved.json()
        assert_idle(url)


def test_a_database_lost_during_the_ai_work_leaves_no_partial_ticket(own_database):
    """INTAKE_MODE=thread holds its transaction through the AI work: losing it there must roll it all back."""
    ticket, provider = marked_ticket(own_database.customer_id), FakeProvider(0.3)
    answers = []
    with serve(create_app(own_settings(own_database, intake_mode="thread"), provider)) as url:
        sender = threading.Thread(target=lambda: answers.extend(post_all(url, [ticket], concurrency=1)))
        sender.start()
        deadline = time.monotonic() + 10
        while not provider.calls:  # the ticket row is inserted, the provider is being asked
            assert time.monotonic() < deadline
            time.sleep(0.01)
        stop_embedded(own_database.pgdata)
        try:
            sender.join(timeout=30)
        finally:
            embedded_dsn(own_database.pgdata)
        assert (answers[0].status_code, answers[0].json()["error"]) == (503, "db_unavailable")
        with psycopg.connect(own_database.dsn) as conn:
            assert rows_of(conn, ticket) == []
        deadline = time.monotonic() + RECOVERY_S
        while post_all(url, [marked_ticket(own_database.customer_id)], concurrency=1)[0].status_code != 201:
            assert time.monotonic() < deadline
        assert_idle(url)


@pytest.mark.timing
@pytest.mark.parametrize("mode", MODES)
def test_a_provider_that_is_down_is_502_within_the_connect_timeout(make_settings, customer_id, db_conn, mode):
    settings = make_settings(intake_mode=mode, provider_url=f"http://127.0.0.1:{free_port()}/v1")
    tickets = [marked_ticket(customer_id) for _ in range(3)]
    with serve(create_app(settings)) as url:  # the real Provider, with its real HTTP clients
        started = time.perf_counter()
        answers = post_all(url, tickets, concurrency=3)
        elapsed_s = time.perf_counter() - started
        assert [(answer.status_code, answer.json()["error"]) for answer in answers] == [(502, "ai_unavailable")] * 3
        assert elapsed_s < CONNECT_TIMEOUT_S
        assert_idle(url)
    assert all(rows_of(db_conn, ticket) == [] for ticket in tickets)


@pytest.fixture(scope="module")
def hanging_simulator(start_simulator):
    """A simulator whose every call hangs for 5 s."""
    return start_simulator("--hang-rate", "1", "--hang-s", "5")


@pytest.mark.timing
@pytest.mark.parametrize("mode", MODES)
def test_a_hanging_provider_is_504_after_the_timeout_and_frees_everything(
    make_settings, hanging_simulator, customer_id, db_conn, mode
):
    settings = make_settings(intake_mode=mode, provider_url=f"{hanging_simulator.url}/v1", provider_timeout_s=0.5)
    tickets = [marked_ticket(customer_id) for _ in range(3)]
    with serve(create_app(settings)) as url:
        started = time.perf_counter()
        answers = post_all(url, tickets, concurrency=3)
        elapsed_s = time.perf_counter() - started
        assert [(answer.status_code, answer.json()["error"]) for answer in answers] == [(504, "ai_timeout")] * 3
        assert elapsed_s < 5  # 0.5 s each; in blocking mode one after another
        assert_idle(url)
    assert all(rows_of(db_conn, ticket) == [] for ticket in tickets)
