"""PostgreSQL through psycopg_pool: `with db.connection() as conn:` is one transaction on a pooled connection."""

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from ticket_api.config import Settings
from ticket_api.errors import StartupError
from ticket_api.instruments.connections import (
    CONNECT_TIMEOUT_S,
    BusyOrDown,
    check_if_server_wrote,
    connect,
    shown_dsn,
)
from ticket_api.instruments.requestlog import CountingConnection, InFlight
from ticket_api.instruments.workers import application_name

# psycopg_pool retries a lost connection with a doubling pause (1, 2, 4, 8, 16 s ...) for
# `reconnect_timeout`, 5 minutes by default: after a minute's outage its next try could come half a
# minute or more after the server is back, with every ticket meanwhile a 503 db_busy. Given up
# sooner, a lost connection is replaced when a request needs one, by a new one tried at once.
RECONNECT_TIMEOUT_S = 5.0


class Database:
    """The process's way to PostgreSQL: a psycopg pool, or a fresh connection for every use (DB_POOL=false)."""

    def __init__(self, dsn: str, settings: Settings):
        self.dsn = dsn
        self.timeout_s = settings.db_pool_timeout_s
        self.max_size = settings.db_pool_max_size
        self.pool = None
        self.connect_kwargs = {"connect_timeout": CONNECT_TIMEOUT_S, "application_name": application_name()}
        if settings.db_pool:
            self.pool = ConnectionPool(
                dsn,
                min_size=min(settings.db_pool_min_size, settings.db_pool_max_size),
                max_size=settings.db_pool_max_size,
                timeout=settings.db_pool_timeout_s,
                connection_class=CountingConnection,
                kwargs=self.connect_kwargs,
                check=check_if_server_wrote,
                reconnect_timeout=RECONNECT_TIMEOUT_S,
                name="ticket_api",
                open=False,
            )
        self.busy_or_down = BusyOrDown(dsn, settings)
        # For /metrics, counted here rather than read from the pool, which counts a connection it is still
        # re-opening as in use, and a request that gave up waiting as waiting, until a connection comes back.
        self.asked = InFlight()  # requests in connection(): waiting for a connection, or holding one
        self.lent = InFlight()  # connections lent to a request

    def open(self) -> None:
        """Check the server and the schema, then fill the pool; failures raise StartupError."""
        with connect(self.dsn) as conn:
            found = conn.execute(
                "SELECT to_regclass('tickets') IS NOT NULL, current_setting('max_connections')"
            ).fetchone()
        if found:
            self.busy_or_down.max_connections = found[1]
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
    def connection(self) -> Iterator[CountingConnection]:
        """A connection in a transaction: committed when the block ends, rolled back if it raises."""
        try:
            if self.pool is None:
                with CountingConnection.connect(self.dsn, **self.connect_kwargs) as conn:
                    yield conn
            else:
                with self.asked, self.pool.connection() as conn, self.lent:
                    yield conn
        except PoolTimeout:
            raise self.busy_or_down.error() from None
        except psycopg.OperationalError as exc:
            raise self.busy_or_down.refused(exc) from None
