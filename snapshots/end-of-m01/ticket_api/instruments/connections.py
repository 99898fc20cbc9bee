"""Reaching PostgreSQL: which server (DATABASE_URL's or the embedded one), why a connection failed, in one line and
without the password (busy or down), and the pool's check of a connection before it lends it."""

import logging
import select
import sys
import time
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from ticket_api.config import Settings
from ticket_api.errors import DatabaseBusy, DatabaseUnavailable, StartupError
from ticket_api.instruments.startup import hide_password

log = logging.getLogger("ticket_api")
CONNECT_TIMEOUT_S = 5
CHECK_EVERY_S = 1.0
UNAVAILABLE = "the database is unavailable"  # 503 db_unavailable: nothing of the server; the cause goes to the log
# PostgreSQL's words for a connection refused for want of a slot: every one taken; all but superusers' (a role
# without SUPERUSER: "... reserved for non-replication superuser connections" up to 15, "... for roles with the
# SUPERUSER attribute" or "... with privileges of the pg_use_reserved_connections role" from 16).
TOO_MANY_CLIENTS = ("sorry, too many clients already", "remaining connection slots are reserved")


def resolve_dsn(settings: Settings) -> str:
    """DATABASE_URL if set; otherwise the embedded server, started if needed."""
    if settings.database_url:
        return settings.database_url
    from ticket_api.instruments.embedded import embedded_dsn  # only the embedded way needs the package

    return embedded_dsn()


def release_dsn(settings: Settings) -> None:
    """Done with the database of resolve_dsn(): the embedded server stops if no other process uses it."""
    if not settings.database_url:
        from ticket_api.instruments.embedded import release_embedded

        release_embedded()


def connect(dsn: str, **kwargs: Any) -> psycopg.Connection:
    """One connection; an unreachable server raises StartupError with the reason in one line."""
    try:
        return psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT_S, **kwargs)
    except (psycopg.OperationalError, psycopg.ProgrammingError) as exc:
        raise StartupError(f"cannot connect to PostgreSQL ({shown_dsn(dsn)}): {one_line(exc, dsn)}") from None


class BusyOrDown:
    """Which 503 a pool timeout is: the pool times out when every connection is in use (db_busy), and when it
    cannot connect at all (db_unavailable). A new connection tells them apart, tried at most once a second
    however many requests time out together."""

    def __init__(self, dsn: str, settings: Settings):
        self.dsn = dsn
        self.pool_max = settings.db_pool_max_size
        self.busy = (
            f"no free database connection within {settings.db_pool_timeout_s:g} s (DB_POOL_MAX_SIZE={self.pool_max})"
        )
        self.max_connections = "?"  # PostgreSQL's, read when the database opens
        self.checked_at = -CHECK_EVERY_S
        self.down_because: str | None = None  # why the last try failed; None: it connected, or the server is full
        self.warned_at = -CHECK_EVERY_S

    def error(self) -> DatabaseBusy | DatabaseUnavailable:
        """The error that a pool timeout is now."""
        now = time.monotonic()
        if now - self.checked_at > CHECK_EVERY_S:
            self.checked_at = now
            try:
                psycopg.connect(self.dsn, connect_timeout=CONNECT_TIMEOUT_S).close()
                self.down_because = None
            except psycopg.OperationalError as exc:
                self.down_because = None if self.full(exc) else one_line(exc, self.dsn)
        if self.down_because is None:
            return DatabaseBusy(self.busy)
        return DatabaseUnavailable(UNAVAILABLE, cause=self.down_because)

    def refused(self, exc: psycopg.OperationalError) -> DatabaseBusy | DatabaseUnavailable:
        """The error that a connection PostgreSQL refused is: 503 db_busy when it is full, else db_unavailable."""
        if self.full(exc):
            return DatabaseBusy(self.busy)
        return DatabaseUnavailable(UNAVAILABLE, cause=one_line(exc, self.dsn))

    def full(self, exc: psycopg.OperationalError) -> bool:
        """Whether PostgreSQL refused for want of a free connection; if so, one line (at most one a second, however
        many requests it refuses) says which settings to change."""
        if not refused_for_too_many_clients(exc):
            return False
        if time.monotonic() - self.warned_at < CHECK_EVERY_S:
            return True
        self.warned_at = time.monotonic()
        log.warning(
            "PostgreSQL refused a connection: its max_connections (%s) are all taken. Each worker process opens up "
            "to DB_POOL_MAX_SIZE (%d): keep workers x DB_POOL_MAX_SIZE under max_connections (lower DB_POOL_MAX_SIZE, "
            "or raise max_connections in postgresql.conf)",
            self.max_connections,
            self.pool_max,
        )
        return True


def refused_for_too_many_clients(exc: psycopg.OperationalError) -> bool:
    """Whether PostgreSQL refused a new connection because its max_connections are taken: every one, or (for a
    role without SUPERUSER) all but the ones it keeps for superusers.

    PostgreSQL's SQLSTATE for it, 53300, does not reach a connection it refused at start-up: libpq gives only the
    server's message, and psycopg none but that (`sqlstate` is None). So the message is read: an English one; a
    server that translates its messages is not told apart, and its refusal stays 503 db_unavailable.
    The lab's tests fail if PostgreSQL or psycopg change it.
    """
    return any(words in str(exc) for words in TOO_MANY_CLIENTS)


def shown_dsn(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return hide_password(dsn)
    parts.pop("password", None)
    return " ".join(f"{key}={value}" for key, value in parts.items())


def one_line(exc: Exception, dsn: str) -> str:
    """psycopg's message on one line, without the DSN's password (should the message ever quote it)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = hide_password("; ".join(lines).removeprefix("connection failed: ") or type(exc).__name__)
    try:
        password = conninfo_to_dict(dsn).get("password")
    except psycopg.ProgrammingError:
        password = None
    return text.replace(str(password), "***") if password else text


def check_if_server_wrote(conn: psycopg.Connection[Any]) -> None:
    """The pool's check before it lends a connection: an empty query, only if the server wrote to it meanwhile."""
    # A connection the server closed while it sat idle (a restart, a terminated backend) has something to read:
    # its end, or the server's last message. It fails the empty query and is replaced, not handed to a request.
    # A connection with nothing to read is lent without the round trip, a ticket's two empty queries fewer.
    if conn.closed or server_wrote(conn):
        ConnectionPool.check_connection(conn)


def server_wrote(conn: psycopg.Connection[Any]) -> bool:
    """Whether the connection has something to read now, without waiting."""
    if sys.platform == "win32":
        return bool(select.select([conn], [], [], 0)[0])  # on Windows, select() takes sockets of any number
    # poll(), one system call; select() refuses a descriptor numbered past 1,023, as a busy API's are.
    poller = select.poll()
    poller.register(conn, select.POLLIN)
    return bool(poller.poll(0))
