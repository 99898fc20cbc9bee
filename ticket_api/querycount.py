"""The API's connections: psycopg's own classes, subclassed to count what the server receives (`queries=N`)."""

from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row

from ticket_api.timing import count_query


class CountingCursor(psycopg.Cursor[DictRow]):
    """A cursor that counts each statement it sends, and the BEGIN that psycopg sends before the first one."""

    def execute(self, query, params=None, **kwargs):
        """psycopg's execute(), counted; not the pool's check of a connection, an empty query."""
        if query != "":
            if not self.connection.autocommit and self.connection.info.transaction_status == TransactionStatus.IDLE:
                count_query()  # BEGIN
            count_query()
        return super().execute(query, params, **kwargs)


class CountingConnection(psycopg.Connection[DictRow]):
    """A connection whose statements are all counted (its cursors' queries, BEGIN, COMMIT and ROLLBACK);
    its rows are dicts: `row["id"]`."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any):
        """psycopg's connect(), with counting cursors, rows as dicts and no prepared statements.

        psycopg prepares a statement after its fifth use, and after a ROLLBACK it then sends DEALLOCATE ALL,
        a statement no request made: without prepared statements, `queries=N` is exactly what the server got.
        """
        return super().connect(
            conninfo, cursor_factory=CountingCursor, row_factory=dict_row, prepare_threshold=None, **kwargs
        )

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
