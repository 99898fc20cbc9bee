"""Every failure of a ticket answers a stable error code, and leaves no row behind."""

import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg.conninfo import make_conninfo

from scripts.toolkit.databases import apply_schema
from tests.fakes import FakeProvider
from ticket_api.errors import ProviderBusy, ProviderTimeout, ProviderUnavailable
from ticket_api.main import create_app

NEW = {"subject": "Export to CSV fails", "body": "The button does nothing."}


def tickets_of(db_conn, customer_id: int) -> int:
    return db_conn.execute("SELECT count(*) FROM tickets WHERE customer_id = %s", (customer_id,)).fetchone()[0]


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (ProviderBusy("quota spent", retry_after=30), 503, "ai_busy"),
        (ProviderUnavailable("answered 500"), 502, "ai_unavailable"),
        (ProviderTimeout("no answer"), 504, "ai_timeout"),
    ],
)
def test_a_provider_failure_answers_its_code_and_saves_nothing(
    make_settings, customer_id, db_conn, error, status, code
):
    with TestClient(create_app(make_settings(), FakeProvider(0.01, error=error))) as client:
        response = client.post("/v1/tickets", json={"customer_id": customer_id, **NEW})
    assert response.status_code == status
    assert response.json() == {"error": code, "detail": error.detail}
    assert tickets_of(db_conn, customer_id) == 0


def test_ai_busy_tells_the_client_when_to_retry(make_settings, customer_id):
    provider = FakeProvider(0.01, error=ProviderBusy("quota spent", retry_after=30))
    with TestClient(create_app(make_settings(), provider)) as client:
        response = client.post("/v1/tickets", json={"customer_id": customer_id, **NEW})
    assert response.headers["Retry-After"] == "30"


def test_an_unexpected_error_is_500_without_a_traceback(make_settings, customer_id, db_conn):
    provider = FakeProvider(0.01, error=RuntimeError("boom in a library"))
    with TestClient(create_app(make_settings(), provider), raise_server_exceptions=False) as client:
        response = client.post("/v1/tickets", json={"customer_id": customer_id, **NEW})
    assert response.status_code == 500
    assert response.json()["error"] == "internal_error"
    assert "boom" not in response.text and "Traceback" not in response.text
    assert tickets_of(db_conn, customer_id) == 0


def test_no_free_database_connection_is_db_busy(make_settings, customer_id):
    settings = make_settings(db_pool_max_size=1, db_pool_timeout_s=0.2)
    with TestClient(create_app(settings, FakeProvider(0.01))) as client:
        with client.app.state.db.connection():  # the pool's only connection, held by the test
            response = client.post("/v1/tickets", json={"customer_id": customer_id, **NEW})
    assert response.status_code == 503
    assert response.json()["error"] == "db_busy"


def test_a_lost_database_is_db_unavailable(make_settings, database_url, customer_id):
    doomed = f"{psycopg.conninfo.conninfo_to_dict(database_url)['dbname']}_doomed"
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {doomed}")
    with psycopg.connect(make_conninfo(database_url, dbname=doomed)) as conn:
        apply_schema(conn)
    try:
        settings = make_settings(database_url=make_conninfo(database_url, dbname=doomed), db_pool_timeout_s=0.5)
        with TestClient(create_app(settings, FakeProvider(0.01))) as client:
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE {doomed} WITH (FORCE)")
            response = client.post("/v1/tickets", json={"customer_id": customer_id, **NEW})
    finally:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {doomed} WITH (FORCE)")
    assert response.status_code == 503
    assert response.json()["error"] == "db_unavailable"
