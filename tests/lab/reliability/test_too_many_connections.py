"""A PostgreSQL with every one of its max_connections taken: the API answers 503 db_busy, never a 500, and says in one
line which two settings to change (workers x DB_POOL_MAX_SIZE against max_connections)."""

import logging
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from scripts.toolkit.databases import apply_schema
from tests.fakes import FakeProvider
from tests.servers import serve
from ticket_api.config import load_settings
from ticket_api.instruments.connections import connect, refused_for_too_many_clients
from ticket_api.instruments.embedded import embedded_dsn, stop_embedded
from ticket_api.main import create_app

MAX_CONNECTIONS = 8
TICKET = {"customer_id": 1, "subject": "Parcel 51 has not arrived", "body": "It was due on Monday."}


@pytest.fixture(scope="module")
def small_server(tmp_path_factory):
    """An embedded PostgreSQL of its own that allows MAX_CONNECTIONS connections, with the schema and customer 1."""
    pgdata = tmp_path_factory.mktemp("small-pg") / "pgdata"
    try:
        with connect(embedded_dsn(pgdata), autocommit=True) as conn:
            apply_schema(conn)
            conn.execute("INSERT INTO customers (id, name, email, plan) VALUES (1, 'Ada', 'ada@example.com', 'pro')")
            conn.execute(f"ALTER SYSTEM SET max_connections = {MAX_CONNECTIONS}")
        stop_embedded(pgdata)  # the setting takes effect at the next start
        yield embedded_dsn(pgdata)
    finally:
        stop_embedded(pgdata)


@pytest.fixture
def all_but(small_server):
    """`all_but(n)`: connections held by the test until it ends, so that the server has `n` left."""
    held: list[psycopg.Connection] = []

    def take(left: int) -> None:
        while len(held) < MAX_CONNECTIONS - left:
            held.append(psycopg.connect(small_server))

    yield take
    for conn in held:
        conn.close()


def test_postgresql_still_refuses_a_connection_past_max_connections_in_the_words_the_api_reads(small_server, all_but):
    all_but(0)
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(small_server).close()
    assert refused.value.sqlstate is None  # were it given, the API would read it instead of the words
    assert refused_for_too_many_clients(refused.value)


def test_a_role_without_superuser_is_refused_earlier_in_words_the_api_reads_too(small_server, all_but):
    with psycopg.connect(small_server, autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'lab_app'").fetchone():
            admin.execute("CREATE ROLE lab_app LOGIN NOSUPERUSER")
    all_but(3)  # the 3 that superuser_reserved_connections keeps: none left for lab_app
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(make_conninfo(small_server, user="lab_app")).close()
    assert refused_for_too_many_clients(refused.value), str(refused.value)


@pytest.mark.timing  # each ticket holds its connection 1.2 s, past the pool timeout of 0.5 s
@pytest.mark.parametrize("pool", [True, False], ids=["pool", "no-pool"])
def test_a_full_server_is_503_db_busy_and_one_line_names_the_two_settings(small_server, all_but, caplog, pool):
    settings = load_settings(
        _env_file=None,
        database_url=small_server,
        intake_mode="thread",  # each ticket holds its connection through the AI wait
        db_pool=pool,
        db_pool_min_size=1,
        db_pool_timeout_s=0.5,
        log_level="WARNING",
    )
    with caplog.at_level(logging.WARNING), serve(create_app(settings, FakeProvider(0.4))) as url:
        all_but(1)  # the API's pool has its one connection; the server, one more for anyone
        with ThreadPoolExecutor(4) as pool_of_clients:
            answers = list(
                pool_of_clients.map(lambda _: httpx.post(f"{url}/v1/tickets", json=TICKET, timeout=30), range(4))
            )
    outcomes = Counter(
        answer.status_code if answer.status_code == 201 else answer.json()["error"] for answer in answers
    )
    assert set(outcomes) <= {201, "db_busy"} and outcomes[201] >= 1 and outcomes["db_busy"] >= 1, outcomes
    said = [r.getMessage() for r in caplog.records if r.name == "ticket_api" and "max_connections" in r.getMessage()]
    assert said and f"max_connections ({MAX_CONNECTIONS})" in said[0] and "DB_POOL_MAX_SIZE (10)" in said[0]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]  # no traceback
