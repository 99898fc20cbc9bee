"""The embedded PostgreSQL server: starts in an empty folder, keeps committed data, explains failures."""

import subprocess
import sys

import pytest

from scripts.toolkit.cli import PROJECT_ROOT
from ticket_api.database import connect
from ticket_api.embedded import embedded_dsn, release_embedded, stop_embedded
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


def test_a_server_started_to_keep_running_outlives_its_users_until_it_is_stopped(tmp_path):
    """What `python -m scripts.db start` does, after a crash say: the server runs until `scripts.db stop`."""
    pgdata = tmp_path / "pgdata"
    start = (
        "from pathlib import Path; from ticket_api.embedded import embedded_dsn; "
        f"embedded_dsn(Path({str(pgdata)!r}), keep_running=True)"
    )
    try:
        subprocess.run([sys.executable, "-c", start], cwd=PROJECT_ROOT, check=True, timeout=120)
        dsn = embedded_dsn(pgdata)  # a user comes and goes: the last one, but the server stays
        release_embedded(pgdata)
        with connect(dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert stop_embedded(pgdata)
        assert not (pgdata / "postmaster.pid").exists()
    finally:
        stop_embedded(pgdata)
