"""Idempotency-Key in every INTAKE_MODE: a retry gets the first ticket back, one key never makes two tickets."""

import uuid

import pytest
from fastapi.testclient import TestClient

from scripts.toolkit.running.stack import MODES
from tests.fakes import FakeProvider
from tests.lab.reliability.reliability_testing import marked_ticket, post_all, rows_of
from tests.servers import serve
from ticket_api.main import create_app

AI_CALLS_PER_TICKET = 3


def new_key() -> str:
    """A key no other test uses (the keys table is shared by the whole run)."""
    return f"test-{uuid.uuid4()}"


@pytest.mark.parametrize("mode", MODES)
def test_a_retry_gets_the_first_ticket_back_without_new_ai_work(make_settings, customer_id, db_conn, mode):
    provider, ticket, key = FakeProvider(0.01), marked_ticket(customer_id), {"Idempotency-Key": new_key()}
    with TestClient(create_app(make_settings(intake_mode=mode), provider)) as client:
        first = client.post("/v1/tickets", json=ticket, headers=key)
        padded = {**ticket, "subject": f"  {ticket['subject']}  "}  # the same ticket once stripped
        retries = [client.post("/v1/tickets", json=body, headers=key) for body in (ticket, padded)]
    assert first.status_code == 201
    assert [retry.status_code for retry in retries] == [201, 201]
    assert all(retry.json() == first.json() for retry in retries)
    assert len(provider.calls) == AI_CALLS_PER_TICKET
    assert rows_of(db_conn, ticket) == [(first.json()["id"], True)]


@pytest.mark.parametrize("mode", MODES)
def test_the_same_key_with_another_ticket_is_refused(make_settings, customer_id, db_conn, mode):
    provider, key = FakeProvider(0.01), {"Idempotency-Key": new_key()}
    first, other = marked_ticket(customer_id), marked_ticket(customer_id, "again")
    with TestClient(create_app(make_settings(intake_mode=mode), provider)) as client:
        assert client.post("/v1/tickets", json=first, headers=key).status_code == 201
        refused = client.post("/v1/tickets", json=other, headers=key)
    assert refused.status_code == 422
    assert refused.json()["error"] == "idempotency_key_reused"
    assert len(provider.calls) == AI_CALLS_PER_TICKET
    assert rows_of(db_conn, other) == []


@pytest.mark.parametrize("mode", MODES)
def test_concurrent_requests_with_one_key_make_one_ticket(make_settings, customer_id, db_conn, mode):
    provider, ticket = FakeProvider(0.1), marked_ticket(customer_id)
    with serve(create_app(make_settings(intake_mode=mode), provider)) as url:
        answers = post_all(url, [ticket] * 5, concurrency=5, headers={"Idempotency-Key": new_key()})
    assert [answer.status_code for answer in answers] == [201] * 5
    assert len({answer.json()["id"] for answer in answers}) == 1
    assert rows_of(db_conn, ticket) == [(answers[0].json()["id"], True)]
    if mode == "thread":
        # The key is claimed in the transaction that waits for the AI: the others wait for it, not the provider.
        assert len(provider.calls) == AI_CALLS_PER_TICKET


@pytest.mark.parametrize("mode", MODES)
def test_concurrent_different_tickets_under_one_key_make_one_ticket(make_settings, customer_id, db_conn, mode):
    tickets = [marked_ticket(customer_id, f"variant {n}") for n in range(4)]
    with serve(create_app(make_settings(intake_mode=mode), FakeProvider(0.1))) as url:
        answers = post_all(url, tickets, concurrency=4, headers={"Idempotency-Key": new_key()})
    assert sorted(answer.status_code for answer in answers) == [201, 422, 422, 422]
    assert {answer.json()["error"] for answer in answers if answer.status_code == 422} == {"idempotency_key_reused"}
    for ticket, answer in zip(tickets, answers, strict=False):
        expected = [(answer.json()["id"], True)] if answer.status_code == 201 else []
        assert rows_of(db_conn, ticket) == expected


@pytest.mark.parametrize(
    "key",
    ["k" * 256, "", "two words", "tab\there", "caf\u00e9", "bell\x07", "del\x7f"],
    ids=["too-long", "empty", "space", "tab", "non-ascii", "control", "delete"],
)
def test_an_invalid_key_is_refused_before_any_work(make_settings, customer_id, key):
    provider = FakeProvider(0.01)
    with TestClient(create_app(make_settings(), provider)) as client:
        answer = client.post(
            "/v1/tickets", json=marked_ticket(customer_id), headers=[("Idempotency-Key", key.encode("latin-1"))]
        )
    assert answer.status_code == 422
    assert answer.json()["error"] == "validation_error"
    assert [field["loc"] for field in answer.json()["detail"]] == [["header", "idempotency-key"]]
    assert provider.calls == []


def test_the_longest_allowed_key_works(client, customer_id):
    answer = client.post("/v1/tickets", json=marked_ticket(customer_id), headers={"Idempotency-Key": "k" * 255})
    assert answer.status_code == 201


@pytest.mark.parametrize("mode", MODES)
def test_an_expired_key_allows_a_new_ticket(make_settings, customer_id, db_conn, mode):
    provider, ticket, key = FakeProvider(0.01), marked_ticket(customer_id), new_key()
    with TestClient(create_app(make_settings(intake_mode=mode), provider)) as client:
        first = client.post("/v1/tickets", json=ticket, headers={"Idempotency-Key": key})
        db_conn.execute("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = %s", (key,))
        renewed = client.post("/v1/tickets", json=ticket, headers={"Idempotency-Key": key})
        retried = client.post("/v1/tickets", json=ticket, headers={"Idempotency-Key": key})
        db_conn.execute("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = %s", (key,))
        other = marked_ticket(customer_id, "other")
        reused = client.post("/v1/tickets", json=other, headers={"Idempotency-Key": key})
    assert [first.status_code, renewed.status_code, retried.status_code, reused.status_code] == [201] * 4
    assert renewed.json()["id"] != first.json()["id"]
    assert retried.json()["id"] == renewed.json()["id"]  # the key now names the new ticket
    assert len(provider.calls) == 3 * AI_CALLS_PER_TICKET
    assert rows_of(db_conn, ticket) == [(first.json()["id"], True), (renewed.json()["id"], True)]
    assert rows_of(db_conn, other) == [(reused.json()["id"], True)]
