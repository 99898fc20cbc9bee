"""The API with the real simulator over real HTTP (sped up 100 times)."""

import httpx
import pytest
from fastapi.testclient import TestClient

from scripts.toolkit import processes, services
from tests.servers import serve
from ticket_api.main import create_app

NEW = {"subject": "Refund for order 4411", "body": "I returned the shoes two weeks ago."}


@pytest.fixture(scope="module")
def simulator():
    """`python -m simulator` at speed 0.01 with the quota off, for this module."""
    with services.simulator(speed=0.01, quota=0) as service:
        yield service


def test_a_ticket_through_the_simulator(make_settings, simulator, customer_id):
    with serve(create_app(make_settings(provider_url=f"{simulator.url}/v1"))) as url:  # a real server, real HTTP
        response = httpx.post(f"{url}/v1/tickets", json={"customer_id": customer_id, **NEW}, timeout=30)
    assert response.status_code == 201
    ticket = response.json()
    assert NEW["subject"] in ticket["draft_reply"]
    assert "ai;dur=" in response.headers["Server-Timing"]


def test_a_spent_quota_becomes_503_ai_busy_with_retry_after(make_settings, customer_id, db_conn):
    with services.simulator(speed=0.01, quota=2) as busy:  # 2 chat calls a minute: one ticket
        with TestClient(create_app(make_settings(provider_url=f"{busy.url}/v1"))) as client:
            first = client.post("/v1/tickets", json={"customer_id": customer_id, **NEW})
            second = client.post("/v1/tickets", json={"customer_id": customer_id, **NEW})
    assert first.status_code == 201
    assert second.status_code == 503
    assert second.json()["error"] == "ai_busy"
    assert int(second.headers["Retry-After"]) >= 1
    assert db_conn.execute("SELECT count(*) FROM tickets WHERE customer_id = %s", (customer_id,)).fetchone()[0] == 1


def test_a_provider_that_is_down_becomes_502_ai_unavailable(make_settings, customer_id):
    settings = make_settings(provider_url=f"http://127.0.0.1:{processes.free_port()}/v1")
    with TestClient(create_app(settings)) as client:
        response = client.post("/v1/tickets", json={"customer_id": customer_id, **NEW})
    assert response.status_code == 502
    assert response.json()["error"] == "ai_unavailable"
