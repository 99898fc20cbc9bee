"""Fixtures of the reliability tests: real simulators and real API processes, on free loopback ports, always stopped."""

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from scripts.toolkit import services
from scripts.toolkit.databases import apply_schema
from scripts.toolkit.running import apis
from ticket_api.instruments.connections import connect
from ticket_api.instruments.embedded import embedded_dsn, stop_embedded


@pytest.fixture(scope="session")
def start_simulator(tmp_path_factory) -> Iterator:
    """`start_simulator(*flags, speed=, quota=)`: a simulator process, ready; every one is stopped at the end."""
    started: list[services.Service] = []

    def start(*flags: str, speed: float = 0.01, quota: int = 0) -> services.Service:
        service = services.simulator(
            speed=speed, quota=quota, extra=list(flags), log_dir=tmp_path_factory.mktemp("sim")
        )
        started.append(service)
        return service.start()

    yield start
    for service in started:
        service.stop(10)


@pytest.fixture
def start_api(database_url: str, tmp_path) -> Iterator:
    """`start_api(provider_url, **env)`: the API as a `python -m uvicorn` process on the test database."""
    started: list[services.Service] = []

    def start(provider_url: str, **env: str) -> services.Service:
        settings = {"DATABASE_URL": database_url, **env}
        service = apis.api(provider_url, env=settings, log_dir=tmp_path / f"api-{len(started)}")
        started.append(service)
        return service.start()

    yield start
    for service in started:
        service.stop(10)


@pytest.fixture(scope="module")
def own_database(tmp_path_factory) -> Iterator[SimpleNamespace]:
    """An embedded PostgreSQL in a tmp folder with the schema and customer 1; tests may stop and start it."""
    pgdata = tmp_path_factory.mktemp("own-pg") / "pgdata"
    try:
        dsn = embedded_dsn(pgdata)
        with connect(dsn) as conn:
            apply_schema(conn)
            conn.execute("INSERT INTO customers (id, name, email, plan) VALUES (1, 'Ada', 'ada@example.com', 'pro')")
        yield SimpleNamespace(pgdata=pgdata, dsn=dsn, customer_id=1)
    finally:
        stop_embedded(pgdata)
