"""What the lab's tools read of PostgreSQL's state: the tickets a run saved and the connections a server holds."""

import time

import psycopg

from scripts.toolkit.measure.database_state import connections_held, last_ticket_id, provider_time_after, saved_tickets


def test_a_connection_idle_in_its_transaction_is_held_and_a_committed_one_is_not(database_url):
    with psycopg.connect(database_url, autocommit=True) as watcher, psycopg.connect(database_url) as holder:
        holder.execute("SELECT 1")  # opens a transaction, then waits outside PostgreSQL
        time.sleep(0.3)
        assert connections_held(watcher, idle_s=0.1) == 1
        holder.commit()
        assert connections_held(watcher, idle_s=0.1) == 0


def test_the_tickets_saved_after_a_mark_and_their_provider_time(database_url, customer_id, client):
    before = last_ticket_id(database_url)
    for _ in range(2):
        assert client.post("/v1/tickets", json={"customer_id": customer_id, "subject": "s", "body": "b"}).is_success
    count, mean_s = provider_time_after(database_url, before)
    assert count == 2 and mean_s is not None and mean_s >= 0.03  # three calls of the fake provider, 10 ms each
    saved = [row for row in saved_tickets(database_url) if row[0] > before]
    assert [(subject, has_results) for _, subject, has_results, _ in saved] == [("s", True), ("s", True)]
