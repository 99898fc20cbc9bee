"""Shared fixtures: real simulators started as subprocesses on free loopback ports, always stopped."""

import pytest

from tests.lab.simulator.sim_testing import RunningServer, start_server


@pytest.fixture(scope="session")
def server_factory(tmp_path_factory):
    """Start simulators (or the recording proxy) on demand; every one is stopped at the end."""
    started: list[RunningServer] = []

    def start(*flags: str, module: str = "simulator", env: dict | None = None) -> RunningServer:
        stderr_path = tmp_path_factory.mktemp("server") / "stderr.txt"
        server = start_server(module, *flags, stderr_path=stderr_path, env=env)
        started.append(server)
        return server

    yield start
    for server in started:  # ask them all to stop first, so their shutdowns overlap
        if server.process.poll() is None:
            server.process.terminate()
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def sim(server_factory) -> RunningServer:
    """A simulator replaying the bundled recording 100 times faster, quota off, seed 7."""
    return server_factory("--speed", "0.01", "--quota", "0", "--seed", "7")


@pytest.fixture(scope="session")
def http(sim):
    """An httpx client for the shared `sim`."""
    with sim.client() as client:
        yield client
