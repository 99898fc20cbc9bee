"""The AI provider over HTTP: `call` sends a request and waits for the answer."""

import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from ticket_api.config import Settings
from ticket_api.errors import ProviderBusy, ProviderTimeout, ProviderUnavailable, describe
from ticket_api.instruments.requestlog import InFlight, note_provider_call


class Provider:
    """One client per process, made in the lifespan; `in_flight` counts calls under way."""

    def __init__(self, settings: Settings, transport: httpx.MockTransport | None = None):
        # The pool must never be the hidden limit: it is as large as PROVIDER_MAX_CONNECTIONS.
        size, timeout_s = settings.provider_max_connections, settings.provider_timeout_s
        options: dict = {
            "base_url": settings.provider_url,
            "headers": {"Authorization": f"Bearer {settings.provider_api_key.get_secret_value()}"},
            "limits": httpx.Limits(max_connections=size, max_keepalive_connections=size),
            "timeout": httpx.Timeout(timeout_s, connect=min(5.0, timeout_s)),
        }
        self._client = httpx.Client(transport=transport, **options)
        self.calls = InFlight()

    def call(self, path: str, body: dict) -> tuple[dict, float]:
        """POST `body` to the provider and wait: (answer, elapsed ms)."""
        started = time.perf_counter()
        response = self._post(path, body)
        return _check(response), (time.perf_counter() - started) * 1000

    def _post(self, path: str, body: dict) -> httpx.Response:
        with self._counted(), _transport_errors():
            return self._client.post(path, json=body)

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
        seconds = response.headers.get("Retry-After", "")  # whole seconds; a date or anything else counts as 1
        retry_after = int(seconds) if seconds.isdigit() else 1
        raise ProviderBusy("the AI provider's quota is spent; retry later", retry_after=retry_after)
    if response.status_code >= 400:
        raise ProviderUnavailable(f"the AI provider answered {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise ProviderUnavailable("the AI provider's answer is not JSON") from None
