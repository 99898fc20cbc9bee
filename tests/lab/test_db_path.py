"""The database path's cuts (ticket_api/README.md, Performance): the embedding as real[] packed by
RealArrayDumper, and statements prepared on first use, with what the server then receives still counted."""

import random

import psycopg
import pytest

from ticket_api.database import Database
from ticket_api.repository import RealArray
from ticket_api.timing import Timer, current_timer


@pytest.fixture
def db(make_settings):
    """An open Database of one connection on the test database."""
    settings = make_settings(db_pool_min_size=1, db_pool_max_size=1)
    database = Database(settings.database_url, settings)
    database.open()
    yield database
    database.close()


def test_a_real_array_arrives_as_the_server_would_cast_the_floats(db):
    rng = random.Random(5)
    values = [rng.uniform(-1, 1) for _ in range(256)] + [0.0, -0.0, 1e-45, 3.0e38, 123456.789]
    with db.connection() as conn:
        packed, cast = conn.execute("SELECT %b, %s::float8[]::real[]", (RealArray(values), values)).fetchone()
    assert packed == cast
    assert len(packed) == len(values)


PREPARED_CHECKS = "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s"


def test_statements_are_prepared_and_a_rollback_counts_the_deallocate_that_follows(db):
    timer = Timer()
    token = current_timer.set(timer)
    try:
        with db.connection() as conn:
            conn.execute("SELECT 1 FROM customers WHERE id = %s", (1,))
            conn.execute("SELECT 1 FROM customers WHERE id = %s", (2,))
            assert conn.execute(PREPARED_CHECKS, ("%FROM customers%",)).fetchone()[0] == 1  # prepared once
        before = timer.queries
        with pytest.raises(psycopg.errors.DivisionByZero), db.connection() as conn:
            conn.execute("SELECT 1 / %s", (0,))
        # BEGIN, the SELECT, ROLLBACK, and the DEALLOCATE ALL psycopg sends after it
        assert timer.queries - before == 4
        with db.connection() as conn:
            assert conn.execute(PREPARED_CHECKS, ("%FROM customers%",)).fetchone()[0] == 0  # deallocated
    finally:
        current_timer.reset(token)
