"""Fixtures of the student suite: a fresh PostgreSQL database per run, settings, the app, a customer."""

import os
from collections.abc import Iterator

import psycopg
import pytest
from fastapi.testclient import TestClient

from scripts.toolkit import dataset
from scripts.toolkit.databases import temporary_database
from tests.fakes import FakeProvider
from ticket_api.config import Settings, load_settings
from ticket_api.database import Database
from ticket_api.instruments.connections import resolve_dsn
from ticket_api.main import create_app

TEST_CUSTOMERS = dataset.Size(customers=20, tickets=0)


@pytest.fixture(autouse=True)
def no_settings_from_the_terminal(monkeypatch) -> None:
    """Each test chooses its settings: none comes from a variable left set in the terminal (but DATABASE_URL)."""
    for name in Settings.model_fields:
        if name != "database_url":
            monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def clean_environment(monkeypatch, tmp_path) -> None:
    """For tests of the settings themselves: no DATABASE_URL either, and a working directory without .env."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A new database for this run on the lab's server (embedded, or the one in DATABASE_URL); dropped after."""
    with temporary_database(resolve_dsn(load_settings()), f"lab_test_{os.getpid()}", TEST_CUSTOMERS) as url:
        yield url


@pytest.fixture
def db_conn(database_url: str) -> Iterator[psycopg.Connection]:
    """A direct connection to the test database, to look at what the API saved."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        yield conn


@pytest.fixture
def make_settings(database_url: str):
    """Settings for a test: the test database, no .env file, quiet logs; pass overrides as keywords."""

    def make(**overrides: object) -> Settings:
        values = {"database_url": database_url, "db_pool_min_size": 1, "log_level": "WARNING", **overrides}
        return load_settings(_env_file=None, **values)

    return make


@pytest.fixture
def db(make_settings) -> Iterator[Database]:
    """An open Database on the test database (a pool of at most 2, waited for at most 0.5 s)."""
    settings = make_settings(db_pool_max_size=2, db_pool_timeout_s=0.5)
    database = Database(settings.database_url, settings)
    database.open()
    yield database
    database.close()


@pytest.fixture
def fake_provider() -> FakeProvider:
    """A provider whose calls take 10 ms."""
    return FakeProvider(delay_s=0.01)


@pytest.fixture
def client(make_settings, fake_provider: FakeProvider) -> Iterator[TestClient]:
    """The API in this process (lifespan included) with the fake provider."""
    with TestClient(create_app(make_settings(), fake_provider)) as test_client:
        yield test_client


@pytest.fixture
def customer_id(db_conn: psycopg.Connection) -> int:
    """A new customer of this test only, so counts and pages start empty."""
    row = db_conn.execute(
        """INSERT INTO customers (id, name, email, plan)
           SELECT coalesce(max(id), 0) + 1, 'Test Customer',
                  'test' || (coalesce(max(id), 0) + 1) || '@example.com', 'pro'
           FROM customers RETURNING id"""
    ).fetchone()
    return row[0]
