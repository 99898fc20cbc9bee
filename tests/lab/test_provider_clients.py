"""provider.acall through each real async client (PROVIDER_ASYNC_CLIENT), against real servers."""

import asyncio
import socket
import threading

import pytest

from scripts import stack
from ticket_api.config import load_settings
from ticket_api.errors import ProviderBusy, ProviderTimeout, ProviderUnavailable
from ticket_api.provider import Provider

CLIENTS = ["aiohttp", "httpx"]
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Subject: Hi\n\nHello"}]}


def acall(client: str, url: str, **settings) -> tuple[dict, float]:
    """One provider.acall with a fresh Provider, closed afterwards."""
    provider = Provider(load_settings(_env_file=None, provider_url=url, provider_async_client=client, **settings))

    async def once() -> tuple[dict, float]:
        try:
            return await provider.acall("/chat/completions", CHAT)
        finally:
            await provider.aclose()

    return asyncio.run(once())


@pytest.fixture(scope="module")
def simulator():
    with stack.simulator(speed=0.01, quota=0) as service:
        yield service


@pytest.fixture
def closing_server():
    """A TCP server on 127.0.0.1 that accepts each connection and closes it at once."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
                connection.close()
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    server.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_acall_returns_the_answer(client, simulator):
    answer, elapsed_ms = acall(client, f"{simulator.url}/v1")
    assert answer["object"] == "chat.completion"
    assert elapsed_ms > 0


@pytest.mark.parametrize("client", CLIENTS)
def test_a_refused_connection_is_unavailable(client):
    with pytest.raises(ProviderUnavailable):
        acall(client, f"http://127.0.0.1:{stack.free_port()}/v1")


@pytest.mark.parametrize("client", CLIENTS)
def test_a_closed_connection_is_unavailable_not_a_timeout(client, closing_server):
    with pytest.raises(ProviderUnavailable):
        acall(client, closing_server)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_hanging_provider_is_a_timeout(client):
    with stack.simulator(speed=0.01, quota=0, extra=["--hang-rate", "1", "--hang-s", "30"]) as hanging:
        with pytest.raises(ProviderTimeout):
            acall(client, f"{hanging.url}/v1", provider_timeout_s=0.5)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_spent_quota_is_busy_with_retry_after(client):
    with stack.simulator(speed=0.01, quota=1) as busy:
        acall(client, f"{busy.url}/v1")
        with pytest.raises(ProviderBusy) as caught:
            acall(client, f"{busy.url}/v1")
    assert caught.value.retry_after >= 1
