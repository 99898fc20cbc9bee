"""Connections to PostgreSQL: from a psycopg pool, or a fresh one for every use (DB_POOL=false)."""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from ticket_api.config import Settings, hide_password
from ticket_api.errors import DatabaseBusy, DatabaseUnavailable, StartupError
from ticket_api.timing import count_query

SCHEMA = Path(__file__).with_name("schema.sql")
CONNECT_TIMEOUT_S = 5
UNAVAILABLE = "the database is unavailable"  # the client's detail; the reason goes to the API's log
PROBE_EVERY_S = 1.0
# psycopg_pool retries a lost connection with a doubling pause (1, 2, 4, 8, 16 s ...) for
# `reconnect_timeout`, 5 minutes by default: after a minute's outage its next try could come half a
# minute or more after the server is back, with every ticket meanwhile a 503 db_busy. Given up
# sooner, a lost connection is replaced when a request needs one, by a new one tried at once.
RECONNECT_TIMEOUT_S = 5.0


class CountingCursor(psycopg.Cursor):
    """A cursor that counts, for the request log's `queries=N`, each statement it sends and the BEGIN before it."""

    def execute(self, query, params=None, **kwargs):
        """psycopg's execute(), counted; not the pool's own check of a connection, an empty query."""
        if query != "":
            if not self.connection.autocommit and self.connection.info.transaction_status == TransactionStatus.IDLE:
                count_query()  # psycopg opens the transaction first: BEGIN is a statement of its own
            count_query()
        return super().execute(query, params, **kwargs)


class CountingConnection(psycopg.Connection):
    """A connection whose statements are all counted: its cursors' queries, BEGIN, COMMIT and ROLLBACK."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs):
        """psycopg's connect(), with counting cursors and no prepared statements.

        psycopg prepares a statement after its fifth use, and after a ROLLBACK it then sends DEALLOCATE ALL,
        a statement no request made: without prepared statements, `queries=N` is exactly what the server got.
        """
        return super().connect(conninfo, cursor_factory=CountingCursor, prepare_threshold=None, **kwargs)

    def commit(self) -> None:
        """Commit, counted if there is a transaction to commit (psycopg sends nothing otherwise)."""
        if self.info.transaction_status != TransactionStatus.IDLE:
            count_query()
        super().commit()

    def rollback(self) -> None:
        """Roll back, counted if there is a transaction to roll back (psycopg sends nothing otherwise)."""
        if self.info.transaction_status != TransactionStatus.IDLE:
            count_query()
        super().rollback()


def resolve_dsn(settings: Settings) -> str:
    """DATABASE_URL if set; otherwise the embedded server, started if needed."""
    if settings.database_url:
        return settings.database_url
    from ticket_api.embedded import embedded_dsn  # only the embedded way needs the package

    return embedded_dsn()


def release_dsn(settings: Settings) -> None:
    """Done with the database of resolve_dsn(): the embedded server stops if no other process uses it."""
    if not settings.database_url:
        from ticket_api.embedded import release_embedded

        release_embedded()


def shown_dsn(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return hide_password(dsn)
    parts.pop("password", None)
    return " ".join(f"{key}={value}" for key, value in parts.items())


def connect(dsn: str, **kwargs: Any) -> psycopg.Connection:
    """One connection; an unreachable server raises StartupError with the reason in one line."""
    try:
        return psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S, **kwargs)
    except (psycopg.OperationalError, psycopg.ProgrammingError) as exc:
        raise StartupError(f"cannot connect to PostgreSQL ({shown_dsn(dsn)}): {_one_line(exc, dsn)}") from None


def apply_schema(conn: psycopg.Connection) -> None:
    """Create the tables if they are missing (the SQL is idempotent)."""
    conn.execute(SCHEMA.read_text())


class Database:
    """The process's way to PostgreSQL; `with db.connection() as conn:` is one transaction."""

    def __init__(self, dsn: str, settings: Settings):
        self.dsn = dsn
        self.timeout_s = settings.db_pool_timeout_s
        self.max_size = settings.db_pool_max_size
        self.pool = None
        if settings.db_pool:
            self.pool = ConnectionPool(
                dsn,
                min_size=min(settings.db_pool_min_size, settings.db_pool_max_size),
                max_size=settings.db_pool_max_size,
                timeout=settings.db_pool_timeout_s,
                connection_class=CountingConnection,
                kwargs={"connect_timeout": CONNECT_TIMEOUT_S},
                # Before it lends a connection, the pool checks it with an empty query: one the server closed
                # while it sat idle (a restart, a terminated backend) is replaced, not handed to a request.
                check=ConnectionPool.check_connection,
                reconnect_timeout=RECONNECT_TIMEOUT_S,
                name="ticket_api",
                open=False,
            )
        # Counted here, not read from the pool: the pool counts connections it is still re-opening as
        # in use, and requests that gave up waiting as waiting, until a connection comes back.
        self._lock = threading.Lock()
        self._usage = {"in_use": 0, "waiting": 0}
        self._lent = 0  # connections lent so far: a save that holds one for milliseconds is counted too
        self._probed_at = -PROBE_EVERY_S
        self._down_because: str | None = None  # why the last probe failed

    def open(self) -> None:
        """Check the server and the schema, then fill the pool; failures raise StartupError."""
        with connect(self.dsn) as conn:
            found = conn.execute("SELECT to_regclass('tickets') IS NOT NULL").fetchone()
        if not found or not found[0]:
            raise StartupError(
                f"the database ({shown_dsn(self.dsn)}) has no lab tables: run `python -m scripts.db init`"
            )
        if self.pool is not None:
            try:
                self.pool.open(wait=True, timeout=self.timeout_s + CONNECT_TIMEOUT_S)
            except PoolTimeout:
                raise StartupError(f"the connection pool to PostgreSQL did not fill ({shown_dsn(self.dsn)})") from None

    def close(self) -> None:
        """Close the pool's connections."""
        if self.pool is not None:
            self.pool.close()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """A connection in a transaction: committed when the block ends, rolled back if it raises."""
        try:
            if self.pool is None:
                with CountingConnection.connect(self.dsn, connect_timeout=CONNECT_TIMEOUT_S) as conn:
                    yield conn
            else:
                with self._counted("waiting"):
                    conn = self.pool.getconn()
                with self._lock:
                    self._lent += 1
                try:
                    with self._counted("in_use"), conn:
                        yield conn
                finally:
                    self.pool.putconn(conn)
        except PoolTimeout:
            self._raise_unavailable_if_down()
            raise DatabaseBusy(
                f"no free database connection within {self.timeout_s:g} s (DB_POOL_MAX_SIZE={self.max_size})"
            ) from None
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(UNAVAILABLE, cause=_one_line(exc, self.dsn)) from None

    def _raise_unavailable_if_down(self) -> None:
        # The pool also times out when it cannot connect at all: tell "busy" from "down" by trying
        # to connect, at most once a second however many requests time out together.
        now = time.monotonic()
        if now - self._probed_at > PROBE_EVERY_S:
            self._probed_at = now
            try:
                psycopg.connect(self.dsn, connect_timeout=CONNECT_TIMEOUT_S).close()
                self._down_because = None
            except psycopg.OperationalError as exc:
                self._down_because = _one_line(exc, self.dsn)
        if self._down_because is not None:
            raise DatabaseUnavailable(UNAVAILABLE, cause=self._down_because)

    def stats(self) -> dict[str, int]:
        """Pool figures for /metrics: size, in use, waiting, lent so far, total ms waited (zeros without a pool)."""
        if self.pool is None:
            return {"size": 0, "in_use": 0, "waiting": 0, "lent": 0, "max": 0, "wait_ms": 0}
        stats = self.pool.get_stats()
        return {
            "size": stats.get("pool_size", 0),
            "in_use": self._usage["in_use"],
            "waiting": self._usage["waiting"],
            "lent": self._lent,
            "max": self.max_size,
            "wait_ms": stats.get("requests_wait_ms", 0),
        }

    @contextmanager
    def _counted(self, figure: str) -> Iterator[None]:
        with self._lock:
            self._usage[figure] += 1
        try:
            yield
        finally:
            with self._lock:
                self._usage[figure] -= 1


def _one_line(exc: Exception, dsn: str) -> str:
    """psycopg's message on one line, without the DSN's password (should the message ever quote it)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = hide_password("; ".join(lines).removeprefix("connection failed: ") or type(exc).__name__)
    try:
        password = conninfo_to_dict(dsn).get("password")
    except psycopg.ProgrammingError:
        password = None
    return text.replace(str(password), "***") if password else text
