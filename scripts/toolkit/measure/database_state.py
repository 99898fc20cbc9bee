"""What the lab's tools read of PostgreSQL's state: the tickets a run saved, their provider time, the connections a
server holds idle in a transaction."""

import psycopg

from scripts.toolkit.databases import one_row
from ticket_api.instruments.connections import connect


def last_ticket_id(dsn: str) -> int:
    """The highest ticket id now: tickets created from now on have higher ones."""
    with connect(dsn) as conn:
        return one_row(conn, "SELECT coalesce(max(id), 0) FROM tickets")[0]


def provider_time_after(dsn: str, after_id: int) -> tuple[int, float | None]:
    """(tickets saved, mean provider seconds per ticket: classify + draft + embed) after the ticket `after_id`."""
    with connect(dsn) as conn:
        count, mean_ms = one_row(
            conn,
            "SELECT count(*), avg(classify_ms + draft_ms + embed_ms) FROM ticket_ai_results WHERE ticket_id > %s",
            (after_id,),
        )
    return count, None if mean_ms is None else float(mean_ms) / 1000


def saved_tickets(dsn: str) -> list[tuple[int, str, bool, float]]:
    """Every ticket: (id, subject, whether its AI results are saved, when it was saved in epoch seconds)."""
    with connect(dsn) as conn:
        return conn.execute(
            """SELECT t.id, t.subject, r.ticket_id IS NOT NULL, extract(epoch FROM t.created_at)::float8 FROM tickets t
               LEFT JOIN ticket_ai_results r ON r.ticket_id = t.id ORDER BY t.id"""
        ).fetchall()


def connections_held(conn: psycopg.Connection, idle_s: float) -> int:
    """The connections to `conn`'s database, but `conn`, idle in an open transaction for longer than `idle_s`:
    waiting for something outside PostgreSQL (a transaction that is only slow, a busy server's commit, is `active`)."""
    query = """SELECT count(*) FROM pg_stat_activity
               WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle in transaction'
                 AND state_change < clock_timestamp() - make_interval(secs => %s)"""
    return one_row(conn, query, (idle_s,))[0]
