"""The repository over a real PostgreSQL: Module 1's one-transaction design and the reads."""

import threading

import psycopg
import pytest

from tests.fakes import FakeProvider
from ticket_api.database import Database
from ticket_api.errors import CustomerNotFound, DatabaseBusy, ProviderBusy
from ticket_api.instruments.requestlog import Timer, current_timer
from ticket_api.models import NewTicket
from ticket_api.repository import create_in_one_transaction, get_ticket, list_tickets


def new_ticket(customer_id: int, subject: str = "Parcel 88 has not arrived") -> NewTicket:
    return NewTicket(customer_id=customer_id, subject=subject, body="It was due on Monday.")


def count_tickets(db_conn, customer_id: int) -> int:
    return db_conn.execute("SELECT count(*) FROM tickets WHERE customer_id = %s", (customer_id,)).fetchone()[0]


def test_create_in_one_transaction_saves_ticket_and_results(db, customer_id, db_conn):
    ticket, work = create_in_one_transaction(db, FakeProvider(0.01), new_ticket(customer_id), Timer())
    assert ticket.category == work.category
    assert get_ticket(db, ticket.id) == ticket
    assert count_tickets(db_conn, customer_id) == 1


def test_create_in_one_transaction_holds_a_connection_during_the_ai_work(db, customer_id):
    seen_in_use = []
    provider = FakeProvider(0.2)
    worker = threading.Thread(target=create_in_one_transaction, args=(db, provider, new_ticket(customer_id), Timer()))
    worker.start()
    while worker.is_alive():
        if provider.in_flight:
            seen_in_use.append(db.lent.now)
        worker.join(0.02)
    assert seen_in_use and min(seen_in_use) == 1


def test_a_ticket_whose_ai_work_fails_leaves_no_row(db, customer_id, db_conn):
    provider = FakeProvider(0.01, error=ProviderBusy("quota spent"))
    with pytest.raises(ProviderBusy):
        create_in_one_transaction(db, provider, new_ticket(customer_id), Timer())
    assert count_tickets(db_conn, customer_id) == 0


def test_an_unknown_customer_raises_before_any_ai_work(db):
    provider = FakeProvider(0.01)
    with pytest.raises(CustomerNotFound):
        create_in_one_transaction(db, provider, new_ticket(987_654), Timer())
    assert provider.calls == []


def test_the_timer_splits_db_and_ai_time(db, customer_id):
    timer = Timer()
    create_in_one_transaction(db, FakeProvider(0.05), new_ticket(customer_id), timer)
    assert timer.spent_ms["ai"] >= 150  # the three calls, in `ai` only
    assert timer.spent_ms["db"] > 0
    # Nested blocks count once: `ai` inside the transaction's `db` leaves the two adding up to no more than the whole.
    # (Not "db < ai": a busy PostgreSQL can take longer over a commit than the fake provider over its calls.)
    assert timer.spent_ms["ai"] + timer.spent_ms["db"] <= timer.total_ms()


def test_every_query_of_a_request_is_counted(db, customer_id):
    timer = Timer()
    token = current_timer.set(timer)
    try:
        create_in_one_transaction(db, FakeProvider(0.0), new_ticket(customer_id), timer)
    finally:
        current_timer.reset(token)
    assert timer.queries == 5  # BEGIN, the customer check, the ticket, its AI results (read back by RETURNING), COMMIT


def test_get_ticket_of_an_unknown_id_is_none(db):
    assert get_ticket(db, 2**62) is None


def test_list_tickets_pages_by_id(db, customer_id):
    ids = [
        create_in_one_transaction(db, FakeProvider(0.0), new_ticket(customer_id, f"T{n}"), Timer())[0].id
        for n in range(3)
    ]
    assert [t.id for t in list_tickets(db, customer_id, limit=2)] == ids[:2]
    assert [t.id for t in list_tickets(db, customer_id, limit=2, after=ids[1])] == ids[2:]
    assert list_tickets(db, customer_id, limit=5, after=ids[2]) == []


def test_a_full_pool_raises_database_busy_after_the_timeout(db):
    with db.connection(), db.connection():
        with pytest.raises(DatabaseBusy) as caught:
            with db.connection():
                pass
    assert "DB_POOL_MAX_SIZE=2" in caught.value.detail


def test_without_a_pool_every_use_opens_a_new_connection(make_settings):
    settings = make_settings(db_pool=False)
    database = Database(settings.database_url, settings)
    database.open()
    with database.connection() as first:
        first_pid = first.info.backend_pid
    with database.connection() as second:
        assert second.info.backend_pid != first_pid
    assert database.pool is None


def test_a_ticket_without_ai_results_cannot_be_committed(database_url, customer_id):
    with psycopg.connect(database_url) as conn:
        conn.execute("INSERT INTO tickets (customer_id, subject, body) VALUES (%s, 's', 'b')", (customer_id,))
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.commit()


def test_the_database_refuses_an_unknown_category(database_url, customer_id):
    with pytest.raises(psycopg.errors.CheckViolation):
        with psycopg.connect(database_url) as conn:
            ticket_id = conn.execute(
                "INSERT INTO tickets (customer_id, subject, body) VALUES (%s, 's', 'b') RETURNING id", (customer_id,)
            ).fetchone()[0]
            conn.execute(
                """INSERT INTO ticket_ai_results (ticket_id, category, priority, draft_reply, embedding, classify_model,
                   classify_ms, draft_model, draft_ms, embed_model, embed_ms)
                   VALUES (%s, 'gossip', 'low', 'r', array_fill(0.0::real, ARRAY[256]), 'm', 1, 'm', 1, 'm', 1)""",
                (ticket_id,),
            )


def test_a_ticket_needs_an_existing_customer(database_url):
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        with psycopg.connect(database_url) as conn:
            conn.execute("INSERT INTO tickets (customer_id, subject, body) VALUES (987654, 's', 'b')")
