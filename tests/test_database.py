"""Finding PostgreSQL: DATABASE_URL or the embedded server, and clear words when it fails."""

import psycopg
import pytest
from fastapi.testclient import TestClient

from scripts.toolkit.databases import apply_schema, temporary_database
from scripts.toolkit.processes import free_port
from tests.fakes import FakeProvider
from ticket_api.database import Database
from ticket_api.errors import StartupError
from ticket_api.instruments.connections import connect, resolve_dsn, shown_dsn
from ticket_api.main import create_app


def test_database_url_is_used_when_set(make_settings, database_url):
    assert resolve_dsn(make_settings()) == database_url


def test_the_password_never_shows_in_messages():
    shown = shown_dsn("postgresql://amira:hunter2@db.example.com:5433/tickets")
    assert "hunter2" not in shown
    assert "db.example.com" in shown and "5433" in shown and "amira" in shown


def test_an_unreachable_server_is_one_clear_line():
    with pytest.raises(StartupError) as caught:
        connect(f"postgresql://lab@127.0.0.1:{free_port()}/lab")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("cannot connect to PostgreSQL")


def test_the_api_does_not_start_without_its_database(make_settings):
    settings = make_settings(database_url=f"postgresql://lab@127.0.0.1:{free_port()}/lab")
    with pytest.raises(StartupError, match="cannot connect to PostgreSQL"):
        with TestClient(create_app(settings, FakeProvider(0.01))):
            pass


def test_a_database_without_the_tables_says_how_to_create_them(make_settings, database_url):
    empty = f"{psycopg.conninfo.conninfo_to_dict(database_url)['dbname']}_empty"
    with temporary_database(database_url, empty) as url:
        settings = make_settings(database_url=url)
        with pytest.raises(StartupError, match="python -m scripts.db init"):
            Database(settings.database_url, settings).open()


def test_the_schema_can_be_applied_again(database_url):
    with psycopg.connect(database_url) as conn:
        apply_schema(conn)
        apply_schema(conn)
        assert conn.execute("SELECT count(*) FROM customers").fetchone()[0] > 0
