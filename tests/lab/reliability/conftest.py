"""Fixtures of the reliability tests: real simulators and real API processes, on free loopback ports, always stopped."""

from typing import Iterator

import pytest

from scripts import stack


@pytest.fixture(scope="session")
def start_simulator(tmp_path_factory) -> Iterator:
    """`start_simulator(*flags, speed=, quota=)`: a simulator process, ready; every one is stopped at the end."""
    started: list[stack.Service] = []

    def start(*flags: str, speed: float = 0.01, quota: int = 0) -> stack.Service:
        service = stack.simulator(speed=speed, quota=quota, extra=list(flags), log_dir=tmp_path_factory.mktemp("sim"))
        started.append(service)
        return service.start()

    yield start
    for service in started:
        service.stop(10)


@pytest.fixture
def start_api(database_url: str, tmp_path) -> Iterator:
    """`start_api(provider_url, **env)`: the API as a `python -m uvicorn` process on the test database."""
    started: list[stack.Service] = []

    def start(provider_url: str, **env: str) -> stack.Service:
        settings = {"DATABASE_URL": database_url, "LAB_ROUTES": "false", **env}
        service = stack.api(provider_url, env=settings, log_dir=tmp_path / f"api-{len(started)}")
        started.append(service)
        return service.start()

    yield start
    for service in started:
        service.stop(10)
