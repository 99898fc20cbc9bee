"""The AI provider over HTTP: `call` waits (a synchronous client), `acall` is awaited (an async client)."""

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from urllib.parse import urlsplit

import aiohttp
import httpx
import orjson
from httpx_aiohttp.transport import AiohttpTransport, map_aiohttp_exceptions

from ticket_api.config import Settings
from ticket_api.errors import ProviderBusy, ProviderTimeout, ProviderUnavailable, describe
from ticket_api.timing import note_provider_call
from ticket_api.transport import Http1Transport

JSON_HEADERS = {"Content-Type": "application/json"}
REACH_TIMEOUT_S = 1.0
log = logging.getLogger("ticket_api")


class Provider:
    """One client of each kind per process, made in the lifespan; `in_flight` counts calls under way."""

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
        self._base_url = settings.provider_url
        self._client = httpx.Client(**options)
        self._aclient = make_async_client(settings.provider_async_client, options)
        cap = settings.provider_max_concurrency
        self._sync_slots = threading.BoundedSemaphore(cap) if cap else None
        self._slots = asyncio.Semaphore(cap) if cap else None
        self._lock = threading.Lock()
        self.in_flight = 0

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
            url = absolute_url(self._base_url, path)
            return _untied(self._client.post(url, content=orjson.dumps(body), headers=JSON_HEADERS))

    async def _apost(self, path: str, body: dict) -> httpx.Response:
        with self._counted(), _transport_errors():
            url = absolute_url(self._base_url, path)
            return _untied(await self._aclient.post(url, content=orjson.dumps(body), headers=JSON_HEADERS))

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

    async def aclose(self) -> None:
        """Close both clients and their connections."""
        self._client.close()
        await self._aclient.aclose()


@lru_cache(maxsize=16)
def absolute_url(base_url: str, path: str) -> httpx.URL:
    """The provider's URL of `path`, parsed once: httpx would parse `path` and join it to base_url on every call."""
    return httpx.URL(base_url + path)


def make_async_client(kind: str, options: dict) -> httpx.AsyncClient:
    """httpx.AsyncClient over asyncio's sockets and httptools (PROVIDER_ASYNC_CLIENT=httptools, the default),
    over aiohttp's connection pool (aiohttp) or over its own (httpx).

    Chosen by measurement (README, "Performance"): httpx's own pool spends CPU per request that
    grows with the connections it holds, so with a few hundred calls in flight the pool, not the
    provider, becomes the limit. aiohttp's pool does not, but builds a request and an answer of
    its own under httpx's; `Http1Transport` only moves the bytes.
    """
    if options["transport"] is not None or kind == "httpx":
        return CookielessAsyncClient(**options)
    if kind == "aiohttp":
        return CookielessAsyncClient(**{**options, "transport": WholeAnswerTransport(limits=options["limits"])})
    return CookielessAsyncClient(**{**options, "transport": Http1Transport(options["limits"])})


class WholeAnswerTransport(AiohttpTransport):
    """httpx-aiohttp's transport, reading each answer whole inside aiohttp.

    The provider's answers are small JSON documents: handing them to httpx as a stream, to be read
    chunk by chunk through two layers of async iterators, cost about 6% of the event loop's time.
    """

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` with aiohttp; the answer, read whole (its body decoded by httpx as usual)."""
        if not isinstance(self.client, aiohttp.ClientSession):
            self.client = self.get_client()
        timeout = request.extensions.get("timeout", {})
        with map_aiohttp_exceptions():
            async with self.client.request(
                request.method,
                str(request.url),
                headers=request.headers,
                data=request.content or None,
                allow_redirects=False,
                auto_decompress=False,
                compress=False,
                timeout=_client_timeout(timeout.get("connect"), timeout.get("read"), timeout.get("pool")),
            ) as answer:
                content = await answer.read()
        return httpx.Response(
            answer.status,
            headers=answer.raw_headers,
            content=content,
            request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (answer.reason or "").encode()},
        )


@lru_cache(maxsize=16)
def _client_timeout(connect: float | None, read: float | None, pool: float | None) -> aiohttp.ClientTimeout:
    # httpx's timeouts in aiohttp's terms, as httpx-aiohttp maps them; made once, not per call.
    return aiohttp.ClientTimeout(sock_connect=connect, sock_read=read, connect=pool)


class _NoCookies(httpx.Cookies):
    def extract_cookies(self, response: httpx.Response) -> None:
        pass


class CookielessAsyncClient(httpx.AsyncClient):
    """httpx.AsyncClient without a cookie store. The provider sets no cookies, and looking for them in
    every answer (httpx builds urllib request and response objects for http.cookiejar) costs about a
    sixth of the client's CPU per call."""

    _no_cookies = _NoCookies()  # always empty: nothing is ever stored in it

    @property
    def cookies(self) -> httpx.Cookies:
        """No cookies, ever."""
        return self._no_cookies

    @cookies.setter
    def cookies(self, cookies: object) -> None:
        raise AttributeError("this client keeps no cookies")


@contextmanager
def _transport_errors() -> Iterator[None]:
    try:
        yield
    except httpx.PoolTimeout:
        raise ProviderBusy("no free connection to the AI provider (PROVIDER_MAX_CONNECTIONS)", retry_after=1) from None
    except httpx.TimeoutException as exc:
        # httpx-aiohttp reports every connection failure as a ConnectTimeout; its cause tells them apart.
        cause = exc.__cause__
        if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, aiohttp.ServerTimeoutError):
            raise ProviderUnavailable("cannot reach the AI provider", cause=describe(cause)) from None
        raise ProviderTimeout("the AI provider did not answer within PROVIDER_TIMEOUT_S") from None
    except httpx.TransportError as exc:
        raise ProviderUnavailable("cannot reach the AI provider", cause=describe(exc)) from None


READ_WHOLE = httpx.ByteStream(b"")


def _untied(response: httpx.Response) -> httpx.Response:
    """The answer, read whole, without its tie to its stream.

    httpx wraps each answer's stream in an object that points back to the answer: a reference
    cycle, so the answer, its request and headers (~16 objects per call) are freed only by the
    garbage collector, not when the last reference goes. With hundreds of calls a second they
    were all of the API's garbage, and the collector's passes stopped the event loop for 50 ms
    and more at 1,024 users (README, "Performance").
    """
    response.stream = READ_WHOLE
    return response


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
