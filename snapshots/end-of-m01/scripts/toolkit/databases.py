"""The lab's database: PostgreSQL started, the schema created and a data set loaded, its status, and throwaway
databases (tests)."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from scripts.toolkit import dataset
from scripts.toolkit.cli import PROJECT_ROOT, CommandError, progress
from ticket_api.instruments.connections import connect, shown_dsn

SCHEMA = PROJECT_ROOT / "ticket_api" / "schema.sql"
TABLES = ("customers", "tickets", "ticket_ai_results", "idempotency_keys")
CUSTOMER_COLUMNS = ("id", "name", "email", "plan", "created_at")
TICKET_COLUMNS = ("id", "customer_id", "subject", "body", "created_at")
RESULT_COLUMNS = (
    "ticket_id",
    "category",
    "priority",
    "draft_reply",
    "embedding",
    "classify_model",
    "classify_ms",
    "draft_model",
    "draft_ms",
    "embed_model",
    "embed_ms",
    "created_at",
)


@contextmanager
def postgres_server(
    database_url: str | None = None, pgdata: Path | None = None, keep_running: bool = False
) -> Iterator[str]:
    """PostgreSQL for the length of the block, its DSN: `database_url`'s server, else the embedded one in `pgdata`
    (.lab/pgdata by default), started if it is not running; after the block it stops, unless another process uses
    it or it is to keep running (`python -m scripts.db start`: until `python -m scripts.db stop`)."""
    if database_url:
        yield database_url
        return
    # Only the embedded way needs the package.
    from ticket_api.instruments.embedded import PGDATA, embedded_dsn, release_embedded

    pgdata = pgdata or PGDATA
    try:
        yield embedded_dsn(pgdata, keep_running)
    finally:
        release_embedded(pgdata)


def apply_schema(conn: psycopg.Connection) -> None:
    """Create the tables if they are missing (the SQL is idempotent)."""
    conn.execute(SCHEMA.read_text())


def init(dsn: str, size_name: str, reset: bool = False) -> str:
    """Create the schema and load a data set unless it is loaded already; returns what it did."""
    with connect(dsn) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(20260101)")  # one loader at a time
        apply_schema(conn)
        loaded = _meta(conn).get("data_size")
        if loaded and not reset:
            if loaded != size_name:
                raise CommandError(
                    f"the database holds the {loaded} data set; add --reset to replace it with {size_name}"
                )
            return f"the {loaded} data set is already loaded"
        conn.execute(f"TRUNCATE {', '.join(TABLES)}, lab_meta RESTART IDENTITY CASCADE")
        _load(conn, dataset.SIZES[size_name])
        conn.execute(
            "INSERT INTO lab_meta (key, value) VALUES ('data_size', %s), ('seed', %s)", (size_name, str(dataset.SEED))
        )
    return f"loaded the {size_name} data set"


def status(dsn: str) -> list[str]:
    """Which server is used, the connections it allows and who holds them, and how many rows each table holds."""
    lines = [f"server: {shown_dsn(dsn)}"]
    with connect(dsn) as conn:
        lines += connections(conn)
        if one_row(conn, "SELECT to_regclass('lab_meta')")[0] is None:
            return [*lines, "no lab tables yet: run `python -m scripts.db init`"]
        lines.append(f"data set: {_meta(conn).get('data_size', 'none')}")
        for table in TABLES:
            (count,) = one_row(conn, f"SELECT count(*) FROM {table}")
            lines.append(f"{table:<20} {count:>8,} rows")
    return lines


def connections(conn: psycopg.Connection) -> list[str]:
    """PostgreSQL's connections in use of its max_connections, and each client's (each API worker: `ticket_api PID`)."""
    allowed, reserved = one_row(
        conn, "SELECT current_setting('max_connections')::int, current_setting('superuser_reserved_connections')::int"
    )
    held = conn.execute(
        """SELECT coalesce(nullif(application_name, ''), '(no name)'), datname, count(*),
                  count(*) FILTER (WHERE state = 'active')
           FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
           GROUP BY 1, 2 ORDER BY 1, 2"""
    ).fetchall()
    in_use = sum(count for _, _, count, _ in held) + 1  # and this one
    lines = [f"connections: {in_use} of max_connections {allowed} ({reserved} kept for superusers), this one included"]
    return lines + [f"  {name} on {database}: {count} ({active} active)" for name, database, count, active in held]


def one_row(conn: psycopg.Connection, query: str, params: tuple = ()) -> tuple:
    """The row of a query that always returns one (an aggregate such as count(*))."""
    row = conn.execute(query, params).fetchone()
    if row is None:
        raise ValueError(f"no row from {query}")
    return row


def load_customers(conn: psycopg.Connection, size: dataset.Size) -> None:
    """COPY a data set's customers into the customers table."""
    with conn.cursor().copy(f"COPY customers ({', '.join(CUSTOMER_COLUMNS)}) FROM STDIN") as copy:
        for row in dataset.customers(size):
            copy.write_row(row)


def create_database(server_dsn: str, name: str) -> str:
    """A new, empty database `name` on the server (one of that name is dropped first); its DSN."""
    drop_database(server_dsn, name)
    with connect(server_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return make_conninfo(server_dsn, dbname=name)


def drop_database(server_dsn: str, name: str) -> None:
    """Drop the database, its connections and all."""
    with connect(server_dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextmanager
def temporary_database(server_dsn: str, name: str, customers: dataset.Size | None = None) -> Iterator[str]:
    """A new database for the length of the block (tests): empty, or with the schema and `customers`; its DSN."""
    dsn = create_database(server_dsn, name) if customers is None else create_lab_database(server_dsn, name, customers)
    try:
        yield dsn
    finally:
        drop_database(server_dsn, name)


def _load(conn: psycopg.Connection, size: dataset.Size) -> None:
    started = time.perf_counter()
    load_customers(conn, size)
    step = size.tickets // 10 if size.tickets >= 10_000 else size.tickets + 1  # progress only when it is slow
    with conn.cursor() as cur:
        with cur.copy(f"COPY tickets ({', '.join(TICKET_COLUMNS)}) FROM STDIN") as tickets_copy:
            results = []
            for done, (ticket, result) in enumerate(dataset.tickets(size), start=1):
                tickets_copy.write_row(ticket)
                results.append(result)
                if done % step == 0:
                    progress(f"  generated {done:,}/{size.tickets:,} tickets ({time.perf_counter() - started:.0f} s)")
        with cur.copy(f"COPY ticket_ai_results ({', '.join(RESULT_COLUMNS)}) FROM STDIN") as results_copy:
            for result in results:
                results_copy.write_row(result)
    conn.execute("SELECT setval(pg_get_serial_sequence('tickets', 'id'), (SELECT max(id) FROM tickets))")


def _meta(conn: psycopg.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM lab_meta").fetchall())


def create_lab_database(server_dsn: str, name: str, size: dataset.Size) -> str:
    """A new database `name` with the lab's schema and `size.customers` customers (no tickets); its DSN."""
    dsn = create_database(server_dsn, name)
    with connect(dsn) as conn:
        apply_schema(conn)
        load_customers(conn, size)
    return dsn
