"""Reaching PostgreSQL, and saying in one line, without the password, why it failed: busy or down."""

import time
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ticket_api.config import Settings, hide_password
from ticket_api.errors import DatabaseBusy, DatabaseUnavailable, StartupError

CONNECT_TIMEOUT_S = 5
CHECK_EVERY_S = 1.0


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
        self.busy = (
            f"no free database connection within {settings.db_pool_timeout_s:g} s "
            f"(DB_POOL_MAX_SIZE={settings.db_pool_max_size})"
        )
        self.checked_at = -CHECK_EVERY_S
        self.down_because: str | None = None  # why the last try failed

    def error(self) -> DatabaseBusy | DatabaseUnavailable:
        """The error that a pool timeout is now."""
        now = time.monotonic()
        if now - self.checked_at > CHECK_EVERY_S:
            self.checked_at = now
            try:
                psycopg.connect(self.dsn, connect_timeout=CONNECT_TIMEOUT_S).close()
                self.down_because = None
            except psycopg.OperationalError as exc:
                self.down_because = one_line(exc, self.dsn)
        if self.down_because is None:
            return DatabaseBusy(self.busy)
        return unavailable(self.down_because)


def unavailable(cause: str) -> DatabaseUnavailable:
    """503 db_unavailable: nothing of the server for the client; the cause goes to the API's log."""
    return DatabaseUnavailable("the database is unavailable", cause=cause)


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
