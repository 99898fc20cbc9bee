"""provider.acall through each real async client (the course's, and experiment 9's: scripts/client_apps.py), against
real servers."""

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import httpx2
import pytest
from fastapi import FastAPI

from scripts.client_apps import httpx2_client, httpx_client
from scripts.toolkit import processes, services
from tests.servers import serve
from ticket_api.config import load_settings
from ticket_api.errors import ProviderBusy, ProviderTimeout, ProviderUnavailable
from ticket_api.provider import Provider

CLIENTS = {"aiohttp": None, "httpx": httpx_client, "httpx2": httpx2_client}  # None: the Provider's own
TRANSLATED = ["aiohttp", "httpx"]  # the clients whose errors provider.py translates: httpx's classes
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Subject: Hi\n\nHello"}]}


def provider_with(client: str, url: str, **settings) -> Provider:
    """A Provider at `url` with `client` under acall (the lab's experiments pass theirs as tests would)."""
    values = load_settings(_env_file=None, provider_url=url, **settings)
    make = CLIENTS[client]
    return Provider(values, async_client=make(values) if make else None)


def acall(client: str, url: str, **settings) -> tuple[dict, float]:
    """One provider.acall with a fresh Provider, closed afterwards."""
    provider = provider_with(client, url, **settings)

    async def once() -> tuple[dict, float]:
        try:
            return await provider.acall("/chat/completions", CHAT)
        finally:
            await provider.aclose()

    return asyncio.run(once())


@pytest.fixture(scope="module")
def simulator():
    with services.simulator(speed=0.01, quota=0) as service:
        yield service


@contextlib.contextmanager
def raw_server(handle: Callable[[socket.socket], None]) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that passes each connection it accepts to `handle`, in a thread; its /v1 URL."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            handle(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join()
        server.close()


@pytest.fixture
def closing_server():
    """A TCP server on 127.0.0.1 that accepts each connection and closes it at once."""
    with raw_server(lambda connection: connection.close()) as url:
        yield url


@pytest.mark.parametrize("client", CLIENTS)
def test_acall_returns_the_answer(client, simulator):
    answer, elapsed_ms = acall(client, f"{simulator.url}/v1")
    assert answer["object"] == "chat.completion"
    assert elapsed_ms > 0


@pytest.mark.parametrize("client", TRANSLATED)
def test_a_refused_connection_is_unavailable(client):
    with pytest.raises(ProviderUnavailable):
        acall(client, f"http://127.0.0.1:{processes.free_port()}/v1")


@pytest.mark.parametrize("client", TRANSLATED)
def test_a_closed_connection_is_unavailable_not_a_timeout(client, closing_server):
    with pytest.raises(ProviderUnavailable):
        acall(client, closing_server)


@pytest.mark.timing
@pytest.mark.parametrize("client", TRANSLATED)
def test_a_hanging_provider_is_a_timeout(client):
    with services.simulator(speed=0.01, quota=0, extra=["--hang-rate", "1", "--hang-s", "30"]) as hanging:
        with pytest.raises(ProviderTimeout):
            acall(client, f"{hanging.url}/v1", provider_timeout_s=0.5)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_spent_quota_is_busy_with_retry_after(client):
    with services.simulator(speed=0.01, quota=1) as busy:
        acall(client, f"{busy.url}/v1")
        with pytest.raises(ProviderBusy) as caught:
            acall(client, f"{busy.url}/v1")
    assert caught.value.retry_after >= 1


def test_httpx2s_own_errors_are_not_translated_as_scripts_client_apps_says():
    with pytest.raises(httpx2.ConnectError):
        acall("httpx2", f"http://127.0.0.1:{processes.free_port()}/v1")


@pytest.fixture(scope="module")
def slow_upstream():
    """A provider on a real server in a thread that answers every call after exactly 0.3 s."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat() -> dict:
        await asyncio.sleep(0.3)
        return {"object": "chat.completion", "choices": []}

    with serve(app) as url:
        yield f"{url}/v1"


@pytest.mark.timing
def test_waiting_too_long_for_a_pooled_connection_is_an_error_not_a_hang(slow_upstream):
    # aiohttp's pool (the default) reports a wait for a free connection past the timeout as a connect
    # timeout: 504 ai_timeout. httpx's own pool starts its wait again whenever another request takes the
    # freed connection, so there the calls wait in line, but none forever.
    provider = provider_with("aiohttp", slow_upstream, provider_max_connections=1, provider_timeout_s=0.5)

    async def three_at_once() -> list:
        try:
            return await asyncio.gather(
                *(provider.acall("/chat/completions", CHAT) for _ in range(3)), return_exceptions=True
            )
        finally:
            await provider.aclose()

    started = time.perf_counter()
    results = asyncio.run(three_at_once())
    assert time.perf_counter() - started < 5
    assert sum(isinstance(result, tuple) for result in results) >= 1  # the first got the connection
    assert any(isinstance(result, ProviderTimeout) for result in results)  # the last waited past the timeout


@pytest.fixture
def answer_once_then_close():
    """A provider on a raw socket that answers one call per connection, keep-alive, then closes it after 0.1 s."""
    body = b'{"object": "chat.completion", "choices": []}'
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)

    def answer_once(connection: socket.socket) -> None:
        with connection:
            request = b""
            while b"\r\n\r\n" not in request:
                request += connection.recv(65536)
            head, _, rest = request.partition(b"\r\n\r\n")
            length = int(
                next(
                    v
                    for k, v in (line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
                    if k.lower() == b"content-length"
                )
            )
            while len(rest) < length:
                rest += connection.recv(65536)
            connection.sendall(answer)
            time.sleep(0.1)

    with raw_server(answer_once) as url:
        yield url


@pytest.mark.parametrize("client", CLIENTS)
def test_a_kept_connection_the_server_closed_while_idle_costs_no_call(client, answer_once_then_close):
    # The pool sees the server's end of stream while the connection is idle, and takes a new one for the next call.
    provider = provider_with(client, answer_once_then_close)

    async def twice() -> list:
        try:
            first = await provider.acall("/chat/completions", CHAT)
            await asyncio.sleep(0.3)  # the server closes the connection meanwhile
            second = await provider.acall("/chat/completions", CHAT)
            return [first, second]
        finally:
            await provider.aclose()

    answers = asyncio.run(twice())
    assert [answer["object"] for answer, _ in answers] == ["chat.completion", "chat.completion"]
