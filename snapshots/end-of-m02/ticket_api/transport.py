"""The connections under `provider.acall`'s httpx.AsyncClient: HTTP/1.1 keep-alive, parsed by httptools.

httpx.AsyncClient builds each request and reads each answer (headers, event hooks, its "HTTP
Request" log line); its transport only moves bytes. This one does it with asyncio's own sockets
and httptools' parser (the C parser uvicorn uses for the API itself), for the one thing the
provider needs: a small JSON request, a small JSON answer, on a connection kept open. What it
keeps of a full client: a pool of at most `max_connections`, the connect, read and pool timeouts,
and httpx's errors for each failure (ConnectError, ConnectTimeout, ReadTimeout, PoolTimeout,
RemoteProtocolError), so that `provider.py` maps them as before. Not here: proxies, HTTP/2,
upgrades, streaming (none of which the provider uses).

Why not aiohttp's pool under httpx (httpx-aiohttp, the earlier default, still PROVIDER_ASYNC_CLIENT=aiohttp):
it builds a second request and answer of its own under httpx's, about 0.09 ms more of the event
loop per call (README, "Performance").
"""

import asyncio
import select
import ssl
import time
from collections import deque

import httptools
import httpx

RESPONSE_EXTENSIONS = {"http_version": b"HTTP/1.1"}
# A connection idle for longer is looked at before it is used again: has the server closed it meanwhile?
CHECK_IDLE_AFTER_S = 1.0


class Http1Transport(httpx.AsyncBaseTransport):
    """httpx's transport interface over a pool of HTTP/1.1 connections, all to the client's one origin."""

    def __init__(self, limits: httpx.Limits, ssl_context: ssl.SSLContext | None = None):
        self._max_connections = limits.max_connections or 1_000_000
        self._in_use = 0  # connections lent to a request; never more than _max_connections
        self._waiting: deque[asyncio.Future] = deque()  # requests waiting for one, first come first served
        self._idle: deque[_Connection] = deque()
        self._keepalive_expiry = limits.keepalive_expiry
        self._ssl_context = ssl_context
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` on an idle connection (or a new one) and read the whole answer."""
        timeout = request.extensions.get("timeout", {})
        await self._take_slot(timeout.get("pool"))
        try:
            message, read_timeout = _head(request) + request.content, timeout.get("read")
            connection = self._idle_connection()
            answer = None
            if connection is not None:
                try:
                    answer = await self._exchange(connection, message, read_timeout)
                except ClosedUnanswered:
                    # The server closed this kept connection before a byte of an answer: it closed it as
                    # idle (keep-alive) just as the request went out, so the request was never read.
                    # Once more, on a new connection; a new connection closed so is an error.
                    pass
            if answer is None:
                connection = await self._connect(request.url, timeout.get("connect"))
                answer = await self._exchange(connection, message, read_timeout)
        finally:
            self._give_slot()
        status, headers, body, encoded = answer
        response = httpx.Response(
            status, headers=headers, stream=httpx.ByteStream(body), request=request, extensions=RESPONSE_EXTENSIONS
        )
        if not encoded:
            # What httpx's read() would make of an answer without Content-Encoding, without its pass
            # through a decoder and a chunker, async iterators each (a tenth of the client's CPU).
            response._content = body
        return response

    async def _exchange(self, connection: "_Connection", message: bytes, read_timeout: float | None) -> tuple:
        try:
            answer = await connection.exchange(message, read_timeout)
        except BaseException:
            connection.close()
            raise
        if connection.reusable():
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()
        return answer

    async def _take_slot(self, pool_timeout: float | None) -> None:
        if self._closed:
            raise httpx.ConnectError("the client is closed")
        if self._in_use < self._max_connections and not self._waiting:
            self._in_use += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        try:
            async with asyncio.timeout(pool_timeout):
                await waiter  # _give_slot hands its slot over: _in_use stays as it is
        except BaseException as exc:
            if waiter.done() and not waiter.cancelled():
                self._give_slot()  # handed over just as the wait ended: pass it on
            else:
                waiter.cancel()
            if isinstance(exc, TimeoutError):
                raise httpx.PoolTimeout("no free connection within the pool timeout") from None
            raise

    def _give_slot(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._in_use -= 1

    def _idle_connection(self) -> "_Connection | None":
        # The most recently used first: the server has least likely closed it meanwhile. A server closes
        # a connection idle for its keep-alive time (uvicorn: 5 s); a request sent just then is lost
        # (502), so a connection idle for a while is checked first, and one idle too long is not reused.
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            idle_s = now - connection.idle_since
            if self._keepalive_expiry is not None and idle_s > self._keepalive_expiry:
                connection.close()
            elif connection.reusable() and (idle_s < CHECK_IDLE_AFTER_S or connection.still_open()):
                return connection
        return None

    async def _connect(self, url: httpx.URL, connect_timeout: float | None) -> "_Connection":
        loop = asyncio.get_running_loop()
        secure = url.scheme == "https"
        port = url.port or (443 if secure else 80)
        if secure and self._ssl_context is None:
            self._ssl_context = ssl.create_default_context()  # once: it loads the system's certificates
        context = self._ssl_context if secure else None
        try:
            async with asyncio.timeout(connect_timeout):
                _, connection = await loop.create_connection(_Connection, url.host, port, ssl=context)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"no connection to {url.host}:{port} within the connect timeout") from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        return connection

    async def aclose(self) -> None:
        """Close every idle connection; the transport refuses new requests."""
        self._closed = True
        while self._idle:
            self._idle.pop().close()


class ClosedUnanswered(httpx.RemoteProtocolError):
    """The server closed the connection before a byte of its answer."""


def _head(request: httpx.Request) -> bytes:
    """The request line and headers, as bytes (httpx has already added Host and Content-Length)."""
    target = request.url.raw_path
    lines = [request.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        lines += [name, b": ", value, b"\r\n"]
    lines.append(b"\r\n")
    return b"".join(lines)


def _readable(sock) -> bool:
    """Whether the socket has something to read (or its end), without waiting; select() only where poll() is
    missing (Windows): it cannot take descriptors past 1023, which a process with 1,000 connections has."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


class _Connection(asyncio.Protocol):
    """One keep-alive connection: one request at a time, its answer parsed as the bytes arrive."""

    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._answer: asyncio.Future | None = None
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._encoded = False
        self._answer_started = False
        self._keep_alive = False
        self._lost = False
        self.idle_since = 0.0  # time.monotonic() when its last answer was read

    # asyncio's side
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        self._answer_started = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"the server's answer is not valid HTTP/1.1: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if self._answer_started:
            self._fail(httpx.RemoteProtocolError("the server closed the connection without a whole answer"))
        else:
            self._fail(ClosedUnanswered("the server closed the connection without an answer"))

    # httptools' side
    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))
        if len(name) == 16 and name.lower() == b"content-encoding":
            self._encoded = True

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        self._keep_alive = self._parser.should_keep_alive()
        if self._answer is not None and not self._answer.done():
            status = self._parser.get_status_code()
            self._answer.set_result((status, self._headers, b"".join(self._body), self._encoded))

    # the transport's side
    async def exchange(self, request: bytes, read_timeout: float | None) -> tuple[int, list, bytes, bool]:
        """Write one request, wait for its whole answer: (status, raw headers, body, whether it is encoded)."""
        assert self._transport is not None and self._answer is None
        loop = asyncio.get_running_loop()
        self._answer = loop.create_future()
        self._headers, self._body, self._encoded, self._keep_alive = [], [], False, False
        self._answer_started = False
        self._transport.write(request)
        # One timer handle, not asyncio.timeout()'s context manager: this runs three times per ticket.
        timer = None if read_timeout is None else loop.call_later(read_timeout, self._time_out)
        try:
            return await self._answer
        finally:
            if timer is not None:
                timer.cancel()
            self._answer = None

    def reusable(self) -> bool:
        """Open, idle, and the last answer allowed keeping it open."""
        return self._keep_alive and not self._lost and self._answer is None

    def still_open(self) -> bool:
        """Whether the server has not closed the connection: a look at the socket, for an end of stream that
        may have arrived before the event loop read it (as httpcore looks before it reuses a connection)."""
        sock = self._transport.get_extra_info("socket") if self._transport is not None else None
        if sock is None or self._lost:
            return False
        if _readable(sock):  # an idle connection has nothing to say: the server closed it, or sent junk
            self.close()
            return False
        return True

    def close(self) -> None:
        """Close the socket (its pending answer, if any, fails)."""
        self._keep_alive = False
        if self._transport is not None:
            self._transport.close()

    def _time_out(self) -> None:
        self._fail(httpx.ReadTimeout("no whole answer within the read timeout"))

    def _fail(self, error: Exception) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_exception(error)
