"""Every SQL statement of the API: plain functions over psycopg (and the transaction around the AI work)."""

from typing import Any

import psycopg
from psycopg.rows import DictRow

from ticket_api.ai import AiWork, do_ai_work
from ticket_api.database import Database
from ticket_api.errors import CustomerNotFound, IdempotencyKeyReused
from ticket_api.instruments.requestlog import Timer
from ticket_api.models import NewTicket, Ticket

TICKET_COLUMNS = """
    t.id, t.customer_id, t.subject, t.body, r.category, r.priority, r.draft_reply, t.created_at
"""
IDEMPOTENCY_KEY_TTL = "24 hours"  # after that, a key may be used for a new ticket


class _KeyTaken(Exception):
    """Another request with the same Idempotency-Key committed its ticket first."""


def create_in_one_transaction(db: Database, provider, new: NewTicket, timer: Timer) -> tuple[Ticket, AiWork | None]:
    """Check the customer, insert the ticket, do the AI work and save its results, all in one transaction."""
    try:
        with timer("db"), db.connection() as conn:
            _check_customer(conn, new.customer_id)
            ticket = _insert_ticket(conn, new)
            work = do_ai_work(provider, new.subject, new.body, timer)  # counted as "ai", not "db"
            return _insert_ai_results(conn, ticket, work), work
    except _KeyTaken:
        return _ticket_under_taken_key(db, new), None


def find_earlier_ticket(db: Database, new: NewTicket) -> Ticket | None:
    """The ticket saved under the request's Idempotency-Key, or None; a different request under it is an error."""
    with db.connection() as conn:
        row = conn.execute(
            f"""SELECT ticket_id, request_hash FROM idempotency_keys
                WHERE key = %s AND created_at > now() - interval '{IDEMPOTENCY_KEY_TTL}'""",
            (new.idempotency_key,),
        ).fetchone()
        if row is None:
            return None
        if row["request_hash"] != new.fingerprint():
            raise IdempotencyKeyReused("this Idempotency-Key was used for a different ticket")
        return _select_ticket(conn, row["ticket_id"])


def _ticket_under_taken_key(db: Database, new: NewTicket) -> Ticket:
    # A committed transaction took the key, so its ticket is there; only a key that expired in
    # between leaves none, and that is an unexpected error (500).
    ticket = find_earlier_ticket(db, new)
    if ticket is None:
        raise RuntimeError("the ticket under a taken Idempotency-Key was not found")
    return ticket


def get_ticket(db: Database, ticket_id: int) -> Ticket | None:
    """One ticket with its AI results, or None."""
    with db.connection() as conn:
        return _select_ticket(conn, ticket_id)


def list_tickets(db: Database, customer_id: int, limit: int, after: int = 0) -> list[Ticket]:
    """A customer's tickets with ids greater than `after`, oldest first, at most `limit`."""
    with db.connection() as conn:
        rows = conn.execute(
            f"""SELECT {TICKET_COLUMNS} FROM tickets t JOIN ticket_ai_results r ON r.ticket_id = t.id
                WHERE t.customer_id = %s AND t.id > %s ORDER BY t.id LIMIT %s""",
            (customer_id, after, limit),
        )
        return [Ticket(**row) for row in rows]


def _check_customer(conn: psycopg.Connection[DictRow], customer_id: int) -> None:
    if conn.execute("SELECT 1 FROM customers WHERE id = %s", (customer_id,)).fetchone() is None:
        raise CustomerNotFound(f"customer {customer_id} does not exist")


def _insert_ticket(conn: psycopg.Connection[DictRow], new: NewTicket) -> dict[str, Any]:
    # RETURNING gives the saved row back in the same round trip: no SELECT to read it again.
    ticket = conn.execute(
        """INSERT INTO tickets (customer_id, subject, body) VALUES (%s, %s, %s)
           RETURNING id, customer_id, subject, body, created_at""",
        (new.customer_id, new.subject, new.body),
    ).fetchone()
    assert ticket is not None  # INSERT ... RETURNING gives the row it inserted
    if new.idempotency_key is not None:
        _claim_key(conn, new, ticket["id"])
    return ticket


def _claim_key(conn: psycopg.Connection[DictRow], new: NewTicket, ticket_id: int) -> None:
    # The primary key decides between concurrent requests: the second INSERT waits for the
    # first transaction, then finds the key taken. An expired key is given up first.
    conn.execute(
        f"DELETE FROM idempotency_keys WHERE key = %s AND created_at <= now() - interval '{IDEMPOTENCY_KEY_TTL}'",
        (new.idempotency_key,),
    )
    claimed = conn.execute(
        """INSERT INTO idempotency_keys (key, request_hash, ticket_id) VALUES (%s, %s, %s)
           ON CONFLICT (key) DO NOTHING RETURNING key""",
        (new.idempotency_key, new.fingerprint(), ticket_id),
    ).fetchone()
    if claimed is None:
        raise _KeyTaken


def _insert_ai_results(conn: psycopg.Connection[DictRow], ticket: dict[str, Any], work: AiWork) -> Ticket:
    results = conn.execute(
        """INSERT INTO ticket_ai_results (ticket_id, category, priority, draft_reply, embedding,
               classify_model, classify_ms, draft_model, draft_ms, embed_model, embed_ms)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
           RETURNING category, priority, draft_reply""",
        (
            ticket["id"],
            work.category,
            work.priority,
            work.draft_reply,
            work.embedding,
            work.models["classify"],
            work.elapsed_ms["classify"],
            work.models["draft"],
            work.elapsed_ms["draft"],
            work.models["embed"],
            work.elapsed_ms["embed"],
        ),
    ).fetchone()
    assert results is not None  # INSERT ... RETURNING gives the row it inserted
    return Ticket(**ticket, **results)


def _select_ticket(conn: psycopg.Connection[DictRow], ticket_id: int) -> Ticket | None:
    row = conn.execute(
        f"SELECT {TICKET_COLUMNS} FROM tickets t JOIN ticket_ai_results r ON r.ticket_id = t.id WHERE t.id = %s",
        (ticket_id,),
    ).fetchone()
    return Ticket(**row) if row else None
