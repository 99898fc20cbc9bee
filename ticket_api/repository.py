"""Every SQL statement of the API: plain functions over psycopg, one place for the database."""

import psycopg
from psycopg.rows import dict_row

from ticket_api.ai import AiWork, do_ai_work
from ticket_api.database import Database
from ticket_api.errors import CustomerNotFound
from ticket_api.models import NewTicket, Ticket
from ticket_api.timing import Timer

TICKET_COLUMNS = """
    t.id, t.customer_id, t.subject, t.body, r.category, r.priority, r.draft_reply, t.created_at
"""


def check_customer(db: Database, customer_id: int) -> None:
    """Raise CustomerNotFound unless the customer exists."""
    with db.connection() as conn:
        _check_customer(conn, customer_id)


def save_new_ticket(db: Database, new: NewTicket, work: AiWork) -> Ticket:
    """Save a ticket and its AI results in one short transaction."""
    with db.connection() as conn:
        ticket_id = _insert_ticket(conn, new)
        _insert_ai_results(conn, ticket_id, work)
        return _select_ticket(conn, ticket_id)


def create_in_one_transaction(db: Database, provider, new: NewTicket, timer: Timer) -> tuple[Ticket, AiWork]:
    """Module 1's design, kept on purpose: the AI work happens while one transaction holds a connection."""
    with timer("db"), db.connection() as conn:
        _check_customer(conn, new.customer_id)
        ticket_id = _insert_ticket(conn, new)
        work = do_ai_work(provider, new.subject, new.body, timer)  # counted as "ai", not "db"
        _insert_ai_results(conn, ticket_id, work)
        return _select_ticket(conn, ticket_id), work


def get_ticket(db: Database, ticket_id: int) -> Ticket | None:
    """One ticket with its AI results, or None."""
    with db.connection() as conn:
        return _select_ticket(conn, ticket_id)


def list_tickets(db: Database, customer_id: int, limit: int, after: int = 0) -> list[Ticket]:
    """A customer's tickets with ids greater than `after`, oldest first, at most `limit`."""
    with db.connection() as conn:
        rows = conn.cursor(row_factory=dict_row).execute(
            f"""SELECT {TICKET_COLUMNS} FROM tickets t JOIN ticket_ai_results r ON r.ticket_id = t.id
                WHERE t.customer_id = %s AND t.id > %s ORDER BY t.id LIMIT %s""",
            (customer_id, after, limit),
        )
        return [Ticket(**row) for row in rows]


def _check_customer(conn: psycopg.Connection, customer_id: int) -> None:
    if conn.execute("SELECT 1 FROM customers WHERE id = %s", (customer_id,)).fetchone() is None:
        raise CustomerNotFound(f"customer {customer_id} does not exist")


def _insert_ticket(conn: psycopg.Connection, new: NewTicket) -> int:
    row = conn.execute(
        "INSERT INTO tickets (customer_id, subject, body) VALUES (%s, %s, %s) RETURNING id",
        (new.customer_id, new.subject, new.body),
    ).fetchone()
    return row[0]


def _insert_ai_results(conn: psycopg.Connection, ticket_id: int, work: AiWork) -> None:
    conn.execute(
        """INSERT INTO ticket_ai_results (ticket_id, category, priority, draft_reply, embedding,
               classify_model, classify_ms, draft_model, draft_ms, embed_model, embed_ms)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
        (
            ticket_id, work.category, work.priority, work.draft_reply, work.embedding,
            work.models["classify"], work.elapsed_ms["classify"],
            work.models["draft"], work.elapsed_ms["draft"],
            work.models["embed"], work.elapsed_ms["embed"],
        ),
    )


def _select_ticket(conn: psycopg.Connection, ticket_id: int) -> Ticket | None:
    row = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {TICKET_COLUMNS} FROM tickets t JOIN ticket_ai_results r ON r.ticket_id = t.id WHERE t.id = %s",
        (ticket_id,),
    ).fetchone()
    return Ticket(**row) if row else None
