"""The AI provider over HTTP: `call` sends a request and waits for the answer."""

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import httpx
import orjson

from ticket_api.config import Settings
from ticket_api.errors import ProviderBusy, ProviderTimeout, ProviderUnavailable, describe
from ticket_api.timing import note_provider_call

JSON_HEADERS = {"Content-Type": "application/json"}
REACH_TIMEOUT_S = 1.0
log = logging.getLogger("ticket_api")


class Provider:
    """One client per process, made in the lifespan; `in_flight` counts calls under way."""

    def __init__(self, settings: Settings, transport=None):
        options = {
            "transport": transport,  # tests may pass an httpx.MockTransport
            "base_url": settings.provider_url,
            "headers": {"Authorization": f"Bearer {settings.provider_api_key.get_secret_value()}"},
            # The pool must never be the hidden limit: it is as large as PROVIDER_MAX_CONNECTIONS,
            # and a call that waits too long for a free connection fails instead of hanging.
            "limits": httpx.Limits(
                max_connections=settings.provider_max_connections,
                max_keepalive_connections=settings.provider_max_connections,
            ),
            "timeout": httpx.Timeout(settings.provider_timeout_s, connect=min(5.0, settings.provider_timeout_s)),
        }
        self._client = httpx.Client(**options)
        self._lock = threading.Lock()
        self.in_flight = 0

    def call(self, path: str, body: dict) -> tuple[dict, float]:
        """POST `body` to the provider and wait: (answer, elapsed ms)."""
        started = time.perf_counter()
        response = self._post(path, body)
        return _check(response), (time.perf_counter() - started) * 1000

    def _post(self, path: str, body: dict) -> httpx.Response:
        with self._counted(), _transport_errors():
            return self._client.post(path, content=orjson.dumps(body), headers=JSON_HEADERS)

    @contextmanager
    def _counted(self) -> Iterator[None]:
        """Count the call in `in_flight` and note its start and end for the request (X-Provider-Calls)."""
        with self._lock:
            self.in_flight += 1
        started = time.perf_counter()
        try:
            yield
        finally:
            note_provider_call(started)
            with self._lock:
                self.in_flight -= 1

    def close(self) -> None:
        """Close the client and its connections."""
        self._client.close()


@contextmanager
def _transport_errors() -> Iterator[None]:
    try:
        yield
    except httpx.PoolTimeout:
        raise ProviderBusy("no free connection to the AI provider (PROVIDER_MAX_CONNECTIONS)", retry_after=1) from None
    except httpx.TimeoutException:
        raise ProviderTimeout("the AI provider did not answer within PROVIDER_TIMEOUT_S") from None
    except httpx.TransportError as exc:
        raise ProviderUnavailable("cannot reach the AI provider", cause=describe(exc)) from None


def _check(response: httpx.Response) -> dict:
    if response.status_code == 429:
        retry_after = _seconds(response.headers.get("Retry-After"))
        raise ProviderBusy("the AI provider's quota is spent; retry later", retry_after=retry_after)
    if response.status_code >= 400:
        raise ProviderUnavailable(f"the AI provider answered {response.status_code}")
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
        raise ProviderUnavailable("the AI provider's answer is not JSON") from None


def _seconds(value: str | None) -> float:
    try:
        return max(1.0, float(value)) if value else 1.0
    except ValueError:
        return 1.0


async def warn_if_unreachable(provider_url: str) -> None:
    """A WARNING line if nothing listens at the provider's address; the API starts anyway (it may come later)."""
    address = urlsplit(provider_url)
    port = address.port or (443 if address.scheme == "https" else 80)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(address.hostname, port), REACH_TIMEOUT_S)
        writer.close()
    except (TimeoutError, OSError) as exc:
        log.warning(
            "the AI provider at %s does not answer (%s): tickets get 502 ai_unavailable until it does",
            provider_url,
            describe(exc) if str(exc) else "no connection within 1 s",
        )
