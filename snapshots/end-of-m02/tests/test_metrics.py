"""GET /metrics: the thread limiter, the DB pool, the provider and the tickets, for Prometheus."""

from fastapi.testclient import TestClient

from scripts.toolkit.metrics import read_metrics
from tests.fakes import FakeProvider
from ticket_api.main import create_app


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample of /metrics, read with prometheus-client's parser."""
    value = read_metrics(text).get(name, **labels)
    assert value is not None, f"{name}{labels or ''} not in /metrics"
    return value


def test_metrics_are_in_prometheus_text_format(client):
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert "# TYPE ticket_api_event_loop_lag_seconds histogram" in response.text


def test_the_thread_limiter_shows_thread_limit(make_settings):
    with TestClient(create_app(make_settings(thread_limit=17), FakeProvider(0.01))) as client:
        text = client.get("/metrics").text
    assert metric(text, "ticket_api_threads_total") == 17
    assert metric(text, "ticket_api_threads_waiting") == 0


def test_the_pool_figures_show_its_settings_and_idle_state(make_settings):
    with TestClient(create_app(make_settings(db_pool_max_size=6), FakeProvider(0.01))) as client:
        text = client.get("/metrics").text
    assert metric(text, "ticket_api_db_pool_max") == 6
    assert metric(text, "ticket_api_db_pool_in_use") == 0
    assert metric(text, "ticket_api_provider_in_flight") == 0


def test_tickets_are_counted_by_outcome(client, customer_id):
    client.post("/v1/tickets", json={"customer_id": customer_id, "subject": "s", "body": "b"})
    client.post("/v1/tickets", json={"customer_id": 999_999, "subject": "s", "body": "b"})
    client.post("/v1/tickets", json={"customer_id": customer_id})
    text = client.get("/metrics").text
    assert metric(text, "ticket_api_tickets_total", outcome="created") == 1
    assert metric(text, "ticket_api_tickets_total", outcome="customer_not_found") == 1
    assert metric(text, "ticket_api_tickets_total", outcome="validation_error") == 1
