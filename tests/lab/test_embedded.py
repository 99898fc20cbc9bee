"""The embedded PostgreSQL server: starts in an empty folder, keeps committed data, explains failures."""

import pytest

from ticket_api.database import connect
from ticket_api.embedded import embedded_dsn, stop_embedded
from ticket_api.errors import StartupError


def test_the_embedded_server_starts_in_an_empty_folder_and_keeps_committed_data(tmp_path):
    pgdata = tmp_path / "pgdata"
    try:
        with connect(embedded_dsn(pgdata), autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (note text)")
            conn.execute("INSERT INTO kept VALUES ('committed')")
        assert stop_embedded(pgdata)
        with connect(embedded_dsn(pgdata)) as conn:
            assert conn.execute("SELECT note FROM kept").fetchone() == ("committed",)
    finally:
        stop_embedded(pgdata)


def test_a_broken_embedded_folder_gives_the_fix(tmp_path):
    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    (pgdata / "PG_VERSION").write_text("9\n")  # looks initialised, but is not a usable cluster
    with pytest.raises(StartupError) as caught:
        embedded_dsn(pgdata)
    message = str(caught.value)
    assert "\n" not in message
    assert "python -m scripts.db stop" in message and "delete" in message
