"""The ticket endpoints: what they answer, what they save, and how they refuse bad input."""

import re

import pytest

from ticket_api.ai import CATEGORIES, PRIORITIES

NEW = {"subject": "Invoice 2041 charged twice", "body": "I was charged twice for the same invoice. Please refund one."}


def post_ticket(client, customer_id: int, **fields):
    return client.post("/v1/tickets", json={"customer_id": customer_id, **NEW, **fields})


def test_a_new_ticket_is_created_with_its_ai_results(client, customer_id):
    response = post_ticket(client, customer_id)
    assert response.status_code == 201
    ticket = response.json()
    assert set(ticket) == {"id", "customer_id", "subject", "body", "category", "priority", "draft_reply", "created_at"}
    assert ticket["customer_id"] == customer_id
    assert ticket["subject"] == NEW["subject"]
    assert ticket["category"] in CATEGORIES
    assert ticket["priority"] in PRIORITIES
    assert NEW["subject"] in ticket["draft_reply"]


def test_the_ticket_and_its_ai_results_are_saved(client, customer_id, db_conn):
    ticket_id = post_ticket(client, customer_id).json()["id"]
    row = db_conn.execute(
        """SELECT t.customer_id, r.classify_model, r.embed_model, cardinality(r.embedding), r.classify_ms, r.draft_ms
           FROM tickets t JOIN ticket_ai_results r ON r.ticket_id = t.id WHERE t.id = %s""",
        (ticket_id,),
    ).fetchone()
    assert row[0] == customer_id
    assert row[1] and row[2]
    assert row[3] == 256
    assert row[4] > 0 and row[5] > 0


def test_the_ai_work_is_three_provider_calls(client, customer_id, fake_provider):
    post_ticket(client, customer_id)
    assert fake_provider.calls == ["/chat/completions", "/chat/completions", "/embeddings"]


def test_subject_and_body_are_stripped(client, customer_id):
    ticket = post_ticket(client, customer_id, subject="  Padded  ", body="\n text \n").json()
    assert (ticket["subject"], ticket["body"]) == ("Padded", "text")


def test_an_unknown_customer_gets_404_and_no_ai_work(client, fake_provider):
    response = post_ticket(client, 999_999)
    assert response.status_code == 404
    assert response.json()["error"] == "customer_not_found"
    assert fake_provider.calls == []


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"subject": "s", "body": "b"},
        {"customer_id": 1, "body": "b"},
        {"customer_id": 1, "subject": "s"},
        {"customer_id": 0, "subject": "s", "body": "b"},
        {"customer_id": -3, "subject": "s", "body": "b"},
        {"customer_id": 2**63, "subject": "s", "body": "b"},
        {"customer_id": "one", "subject": "s", "body": "b"},
        {"customer_id": 1, "subject": "", "body": "b"},
        {"customer_id": 1, "subject": "   ", "body": "b"},
        {"customer_id": 1, "subject": "s" * 201, "body": "b"},
        {"customer_id": 1, "subject": "s", "body": "b" * 5001},
        {"customer_id": 1, "subject": 5, "body": "b"},
        {"customer_id": 1, "subject": "s", "body": "b", "priority": "urgent"},
        [1, 2, 3],
    ],
)
def test_bad_input_gets_422_with_the_fields(client, body):
    response = client.post("/v1/tickets", json=body)
    assert response.status_code == 422
    assert response.json()["error"] == "validation_error"
    assert all("loc" in error and "msg" in error for error in response.json()["detail"])


def test_a_body_that_is_not_json_gets_422(client):
    response = client.post("/v1/tickets", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert response.json()["error"] == "validation_error"


def test_a_body_that_is_not_declared_as_json_gets_422(client, customer_id):
    body = f'{{"customer_id": {customer_id}, "subject": "s", "body": "b"}}'
    response = client.post("/v1/tickets", content=body.encode(), headers={"Content-Type": "text/plain"})
    assert response.status_code == 422


def test_an_oversized_body_gets_413(client, customer_id):
    response = post_ticket(client, customer_id, body="x" * 100_000)
    assert response.status_code == 413
    assert response.json()["error"] == "body_too_large"


def test_a_saved_ticket_can_be_read_back(client, customer_id):
    created = post_ticket(client, customer_id).json()
    response = client.get(f"/v1/tickets/{created['id']}")
    assert response.status_code == 200
    assert response.json() == created


def test_an_unknown_ticket_gets_404(client):
    response = client.get("/v1/tickets/987654321")
    assert response.status_code == 404
    assert response.json()["error"] == "ticket_not_found"


@pytest.mark.parametrize("ticket_id", ["0", "-1", "abc", str(2**63)])
def test_an_impossible_ticket_id_gets_422(client, ticket_id):
    assert client.get(f"/v1/tickets/{ticket_id}").status_code == 422


def test_a_customers_tickets_come_in_pages_oldest_first(client, customer_id):
    ids = [post_ticket(client, customer_id, subject=f"Question {n}").json()["id"] for n in range(5)]
    first = client.get("/v1/tickets", params={"customer_id": customer_id, "limit": 2}).json()
    assert [t["id"] for t in first["tickets"]] == ids[:2]
    assert first["next_after"] == ids[1]
    second = client.get(
        "/v1/tickets", params={"customer_id": customer_id, "limit": 2, "after": first["next_after"]}
    ).json()
    assert [t["id"] for t in second["tickets"]] == ids[2:4]
    last = client.get(
        "/v1/tickets", params={"customer_id": customer_id, "limit": 2, "after": second["next_after"]}
    ).json()
    assert [t["id"] for t in last["tickets"]] == ids[4:]
    assert last["next_after"] is None


def test_a_customer_without_tickets_gets_an_empty_page(client, customer_id):
    assert client.get("/v1/tickets", params={"customer_id": customer_id}).json() == {"tickets": [], "next_after": None}


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"customer_id": 1, "limit": 0},
        {"customer_id": 1, "limit": 101},
        {"customer_id": 1, "after": -1},
        {"customer_id": "x"},
    ],
)
def test_bad_paging_parameters_get_422(client, params):
    assert client.get("/v1/tickets", params=params).status_code == 422


def test_health_answers_ok(client):
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_health_does_no_database_work(client):
    assert client.get("/health").headers["Server-Timing"].startswith("db;dur=0.0")


def test_an_unknown_path_gets_404_with_the_error_body(client):
    response = client.get("/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_every_answer_says_where_its_time_went(client, customer_id):
    timing = post_ticket(client, customer_id).headers["Server-Timing"]
    spent = dict(re.findall(r"(\w+);dur=([\d.]+)", timing))
    assert set(spent) == {"db", "ai", "other", "total"}
    assert float(spent["ai"]) > 0 and float(spent["db"]) > 0
    assert float(spent["total"]) >= float(spent["ai"])
