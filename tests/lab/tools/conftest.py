"""Fixtures of the tools' tests: a database with the small data set, and the API served with a fake provider."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from psycopg.conninfo import conninfo_to_dict

from scripts.toolkit.databases import init, temporary_database
from tests.fakes import FakeProvider
from tests.servers import serve
from ticket_api.config import load_settings
from ticket_api.main import create_app


@pytest.fixture(scope="session")
def lab_database_url(database_url: str) -> Iterator[str]:
    """A database of its own with the small data set (customers 1..300, as the scripts expect); dropped after."""
    with temporary_database(database_url, f"{conninfo_to_dict(database_url)['dbname']}_tools") as url:
        init(url, "small")
        yield url


@pytest.fixture
def served_api(lab_database_url: str):
    """`with served_api(mode, provider) as url:` the API on a real server in a thread, on the small data set.

    Without a provider it makes its own real one: pass `provider_url=...` (and any other setting).
    """

    @contextmanager
    def start(mode: str, provider: FakeProvider | None = None, **settings: object) -> Iterator[str]:
        values = {"intake_mode": mode, "db_pool_min_size": 1, "log_level": "WARNING", **settings}
        with serve(create_app(load_settings(_env_file=None, database_url=lab_database_url, **values), provider)) as url:
            yield url

    return start
