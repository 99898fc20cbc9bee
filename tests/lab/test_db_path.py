"""The database path as psycopg gives it: an embedding sent as a plain list, and no prepared statements, so that
`queries=N` counts what the server receives (tests/lab/test_queries.py holds it to the server's log)."""

import random

import psycopg
import pytest

from ticket_api.instruments.requestlog import Timer, current_timer

PREPARED = "SELECT count(*) AS prepared FROM pg_prepared_statements"


@pytest.fixture
def timer():
    """A request's timer, as the request log sets it: what the statements are counted in."""
    timer = Timer()
    token = current_timer.set(timer)
    yield timer
    current_timer.reset(token)


def test_an_embedding_sent_as_a_list_of_floats_is_stored_as_real(db):
    values = [random.Random(5).uniform(-1, 1) for _ in range(256)]
    with db.connection() as conn:
        row = conn.execute("SELECT %s::real[] AS stored, %s::float8[]::real[] AS cast", (values, values)).fetchone()
    assert row["stored"] == row["cast"] and len(row["stored"]) == 256


def test_no_statement_is_prepared_so_a_rollback_sends_nothing_uncounted(db, timer):
    with db.connection() as conn:
        for customer in range(10):  # psycopg would prepare a statement from its fifth use on
            conn.execute("SELECT 1 FROM customers WHERE id = %s", (customer,))
        assert conn.execute(PREPARED).fetchone()["prepared"] == 0
    before = timer.queries
    with pytest.raises(psycopg.errors.DivisionByZero), db.connection() as conn:
        conn.execute("SELECT 1 / %s", (0,))
    assert timer.queries - before == 3  # BEGIN, the SELECT, ROLLBACK: no DEALLOCATE ALL after it
