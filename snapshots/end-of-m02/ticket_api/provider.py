"""The AI provider over HTTP: `call` waits (a synchronous client), `acall` is awaited (an async client)."""

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

from ticket_api.config import Settings
from ticket_api.errors import ProviderBusy, ProviderTimeout, ProviderUnavailable, describe
from ticket_api.instruments.requestlog import InFlight, note_provider_call


class Provider:
    """One client of each kind per process, made in the lifespan (tests pass a `transport` for both; the lab's
    experiments pass another `async_client`, with httpx's API); `in_flight` counts calls under way."""

    def __init__(self, settings: Settings, transport: httpx.MockTransport | None = None, async_client=None):
        options = client_options(settings)
        self._client = httpx.Client(transport=transport, **options)
        # httpx's async client on aiohttp's connection pool (httpx-aiohttp): httpx's own pool costs the event loop
        # CPU for every call in flight.
        pool = transport or AiohttpTransport(limits=options["limits"])
        self._aclient = async_client or httpx.AsyncClient(transport=pool, **options)
        cap = settings.provider_max_concurrency
        self._sync_slots = threading.BoundedSemaphore(cap) if cap else None
        self._slots = asyncio.Semaphore(cap) if cap else None
        self.calls = InFlight()

    def call(self, path: str, body: dict) -> tuple[dict, float]:
        """POST `body` to the provider and wait: (answer, elapsed ms), including any wait for a free slot."""
        started = time.perf_counter()
        if self._sync_slots is None:
            response = self._post(path, body)
        else:
            with self._sync_slots:
                response = self._post(path, body)
        return _check(response), (time.perf_counter() - started) * 1000

    async def acall(self, path: str, body: dict) -> tuple[dict, float]:
        """The same as call(), awaited. The time includes any wait for a free slot."""
        started = time.perf_counter()
        if self._slots is None:
            response = await self._apost(path, body)
        else:
            async with self._slots:
                response = await self._apost(path, body)
        return _check(response), (time.perf_counter() - started) * 1000

    def _post(self, path: str, body: dict) -> httpx.Response:
        with self._counted(), _transport_errors():
            return self._client.post(path, json=body)

    async def _apost(self, path: str, body: dict) -> httpx.Response:
        with self._counted(), _transport_errors():
            return await self._aclient.post(path, json=body)

    @property
    def in_flight(self) -> int:
        """Calls to the provider under way, for /metrics."""
        return self.calls.now

    @contextmanager
    def _counted(self) -> Iterator[None]:
        """Count the call in `in_flight`, and note its start and end for the request (X-Provider-Calls)."""
        started = time.perf_counter()
        try:
            with self.calls:
                yield
        finally:
            note_provider_call(started)

    async def aclose(self) -> None:
        """Close both clients and their connections."""
        self._client.close()
        await self._aclient.aclose()


def client_options(settings: Settings) -> dict:
    """The clients' options: the provider's address and key, the pool's size and the timeouts."""
    # The pool must never be the hidden limit: it is as large as PROVIDER_MAX_CONNECTIONS.
    size, timeout_s = settings.provider_max_connections, settings.provider_timeout_s
    return {
        "base_url": settings.provider_url,
        "headers": {"Authorization": f"Bearer {settings.provider_api_key.get_secret_value()}"},
        "limits": httpx.Limits(max_connections=size, max_keepalive_connections=size),
        "timeout": httpx.Timeout(timeout_s, connect=min(5.0, timeout_s)),
    }


@contextmanager
def _transport_errors() -> Iterator[None]:
    try:
        yield
    except httpx.PoolTimeout:
        raise ProviderBusy("no free connection to the AI provider (PROVIDER_MAX_CONNECTIONS)", retry_after=1) from None
    except httpx.TimeoutException as exc:
        # httpx-aiohttp reports a refused or dropped connection as a ConnectTimeout too; its cause tells them apart.
        cause = exc.__cause__
        if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, aiohttp.ServerTimeoutError):
            raise ProviderUnavailable("cannot reach the AI provider", cause=describe(cause)) from None
        raise ProviderTimeout("the AI provider did not answer within PROVIDER_TIMEOUT_S") from None
    except httpx.TransportError as exc:
        raise ProviderUnavailable("cannot reach the AI provider", cause=describe(exc)) from None


def _check(response: httpx.Response) -> dict:
    if response.status_code == 429:
        seconds = response.headers.get("Retry-After", "")  # whole seconds; a date or anything else counts as 1
        retry_after = int(seconds) if seconds.isdigit() else 1
        raise ProviderBusy("the AI provider's quota is spent; retry later", retry_after=retry_after)
    if response.status_code >= 400:
        raise ProviderUnavailable(f"the AI provider answered {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise ProviderUnavailable("the AI provider's answer is not JSON") from None
