"""`queries=N` against PostgreSQL's own statement log: the API counts what the server receives.

The API runs on a database of this module's own with `log_statement = 'all'`, so the server logs
every statement its sessions send. A request's statements are the log lines between the request's
start and a marker statement the test sends once the answer is back (the API sends nothing
between requests, and no one else uses the database).
"""

import logging
import os
import re
import resource
import time
import uuid
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient

from scripts.toolkit.databases import apply_schema, temporary_database
from scripts.toolkit.running.stack import MODES
from tests.fakes import FakeProvider
from ticket_api.config import load_settings
from ticket_api.instruments.connections import check_if_server_wrote, connect, resolve_dsn, server_wrote
from ticket_api.main import create_app

CUSTOMER_ID = 1
TICKET = {"customer_id": CUSTOMER_ID, "subject": "Parcel 88 has not arrived", "body": "It was due on Monday."}
# A new ticket: BEGIN, the customer, COMMIT, then BEGIN, the ticket, its AI results, COMMIT; thread
# mode does it all in one transaction.
NEW_TICKET_QUERIES = {"thread": 5, "blocking": 7, "async": 7}
# `2026-12-01 03:31:00.154 UTC [12467] LOG:  execute <unnamed>: SELECT ...`, with any prefix that has `[%p]`.
STATEMENT = re.compile(r"^.*?\[(\d+)\].*? LOG:  (?:statement|execute [^:]+): (.*)$")


@pytest.fixture(scope="module")
def logged_database() -> Iterator[SimpleNamespace]:
    """A database with the schema and one customer, whose every statement the server logs; and that log."""
    settings = load_settings()  # the server the suite uses (tests/conftest.py)
    server_dsn = resolve_dsn(settings)
    with connect(server_dsn) as admin:
        superuser, prefix, logfile = admin.execute(
            "SELECT current_setting('is_superuser') = 'on', current_setting('log_line_prefix'),"
            " pg_current_logfile('stderr')"
        ).fetchone()
    if not settings.database_url:
        logfile = logfile or "log"  # the embedded server's stderr, in its data directory (ticket_api/embedded.py)
    if not superuser or logfile is None or "[%p]" not in prefix:
        pytest.skip(
            "the server of DATABASE_URL does not let this test read its statement log "
            "(it needs a superuser, logging_collector = on and [%p] in log_line_prefix)"
        )
    name = f"lab_queries_{os.getpid()}"
    with temporary_database(server_dsn, name) as url:
        with connect(url, autocommit=True) as conn:
            apply_schema(conn)
            conn.execute(
                "INSERT INTO customers (id, name, email, plan) VALUES (%s, 'Ada', 'ada@example.com', 'pro')",
                (CUSTOMER_ID,),
            )
            conn.execute(f"ALTER DATABASE {name} SET log_statement = 'all'")
        with connect(url, autocommit=True) as marker:  # a session after the ALTER: its statements are logged too
            yield SimpleNamespace(url=url, logfile=logfile, marker=marker)


def read_log(db: SimpleNamespace, offset: int = 0) -> str:
    """The server log from `offset` on (a superuser may read the files of the data directory)."""
    data = db.marker.execute(
        "SELECT pg_read_binary_file(%s, %s, (pg_stat_file(%s)).size - %s)", (db.logfile, offset, db.logfile, offset)
    ).fetchone()[0]
    return bytes(data).decode(errors="replace")


def api_settings(db: SimpleNamespace, **overrides: object):
    """The API's settings on the logged database (quiet: each test turns the request lines on with caplog)."""
    return load_settings(_env_file=None, database_url=db.url, log_level="WARNING", **overrides)


def log_size(db: SimpleNamespace) -> int:
    """How many bytes the server log holds now."""
    return db.marker.execute("SELECT (pg_stat_file(%s)).size", (db.logfile,)).fetchone()[0]


def request_counted(
    client: TestClient, db: SimpleNamespace, caplog, method: str, path: str, **kwargs
) -> tuple[httpx.Response, int, list[str], int]:
    """One request: its answer, its `queries=N`, the statements the server logged for it (`[pid] text`), and the
    pool's checks of a connection it lent (ConnectionPool.check_connection: an empty statement each)."""
    request_id = uuid.uuid4().hex[:12]
    start = log_size(db)
    answer = client.request(method, path, headers={"X-Request-ID": request_id, **kwargs.pop("headers", {})}, **kwargs)
    marker = f"request {request_id} answered"
    db.marker.execute("SELECT %s::text", (marker,))
    deadline = time.monotonic() + 10  # a logging collector writes a moment later
    while marker not in (text := read_log(db, start)):
        assert time.monotonic() < deadline, f"the server log never showed the marker {marker!r}"
        time.sleep(0.05)
    logged = [
        f"[{found[1]}] {found[2]}"
        for line in text.splitlines()
        if (found := STATEMENT.match(line)) and int(found[1]) != db.marker.info.backend_pid
    ]
    statements = [statement for statement in logged if not statement.endswith("] ")]
    (queries,) = [
        int(found[1])
        for record in caplog.records
        if record.name == "ticket_api"
        and (found := re.search(rf" queries=(\d+) id={request_id}$", record.getMessage()))
    ]
    return answer, queries, statements, len(logged) - len(statements)


@pytest.mark.parametrize(
    ("mode", "pool"), [(mode, True) for mode in MODES] + [("async", False)], ids=[*MODES, "async-without-pool"]
)
def test_queries_n_is_what_the_server_logged(logged_database, caplog, mode, pool):
    settings = api_settings(logged_database, intake_mode=mode, db_pool=pool, db_pool_min_size=1)
    keyed = {
        "json": {**TICKET, "subject": f"Parcel {uuid.uuid4().hex[:8]}"},
        "headers": {"Idempotency-Key": f"test-{uuid.uuid4()}"},
    }
    figures = {}
    with TestClient(create_app(settings, FakeProvider(0.0))) as client, caplog.at_level(logging.INFO, "ticket_api"):

        def check(name: str, status: int, method: str, path: str, **kwargs) -> httpx.Response:
            answer, queries, statements, _ = request_counted(client, logged_database, caplog, method, path, **kwargs)
            assert answer.status_code == status, answer.text
            assert queries == len(statements), "\n".join([f"{name}: queries={queries}, logged:", *statements])
            figures[name] = queries
            return answer

        saved = check("new ticket", 201, "POST", "/v1/tickets", json=TICKET).json()
        first = check("new ticket with a key", 201, "POST", "/v1/tickets", **keyed).json()
        assert check("the same ticket retried", 201, "POST", "/v1/tickets", **keyed).json() == first
        assert check("one ticket", 200, "GET", f"/v1/tickets/{saved['id']}").json() == saved
        check("a page", 200, "GET", "/v1/tickets", params={"customer_id": CUSTOMER_ID})
        check("an unknown customer", 404, "POST", "/v1/tickets", json={**TICKET, "customer_id": CUSTOMER_ID + 1})
    assert figures["new ticket"] == NEW_TICKET_QUERIES[mode], figures


def test_a_connection_the_server_closed_is_replaced_before_a_request_gets_it_and_a_healthy_one_is_lent_unchecked(
    logged_database, caplog
):
    settings = api_settings(logged_database, db_pool_min_size=2)
    with TestClient(create_app(settings, FakeProvider(0.0))) as client, caplog.at_level(logging.INFO, "ticket_api"):
        closed = logged_database.marker.execute(
            """SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
               WHERE datname = current_database() AND pid <> pg_backend_pid()"""
        ).fetchall()
        assert closed and all(done for (done,) in closed)  # every connection of the API's pool
        answer, queries, statements, checks = request_counted(
            client, logged_database, caplog, "POST", "/v1/tickets", json=TICKET
        )
        again, _, _, checks_again = request_counted(client, logged_database, caplog, "POST", "/v1/tickets", json=TICKET)
    assert answer.status_code == again.status_code == 201
    assert queries == len(statements) == NEW_TICKET_QUERIES["async"], statements
    # No empty query reached the server: the closed connections were told by what their sockets had to read, and
    # replaced; the new ones, which the server had not written to, were lent without the round trip.
    assert checks == checks_again == 0


def test_the_pool_check_reads_a_connection_whose_descriptor_is_past_1023(logged_database):
    """A worker with a thousand client sockets opens its next connections past descriptor 1,023, where select()
    cannot look: the check must still tell a healthy connection from one the server closed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip(f"this process may open {hard} files, not the 1,100 the test needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
    fillers = []
    try:
        while not fillers or fillers[-1] < 1030:
            fillers.append(os.open(os.devnull, os.O_RDONLY))
        with connect(logged_database.url, autocommit=True) as conn:
            assert conn.fileno() > 1023
            assert not server_wrote(conn)
            check_if_server_wrote(conn)  # a healthy connection passes
            logged_database.marker.execute("SELECT pg_terminate_backend(%s, 5000)", (conn.info.backend_pid,))
            assert server_wrote(conn)
            with pytest.raises(psycopg.OperationalError):
                check_if_server_wrote(conn)  # a closed one fails its check: the pool replaces it
    finally:
        for descriptor in fillers:
            os.close(descriptor)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
