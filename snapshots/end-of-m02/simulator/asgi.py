"""The thin ASGI layer: reading a request, sending JSON, and waiting while watching the client.

The simulator speaks raw ASGI instead of going through a framework: on the lab machine, the
same JSON route served about 1.6x the calls per second of Starlette and 3.4x those of FastAPI
(figures in simulator/README.md). A provider stand-in must never be the slow part.
"""

import asyncio
import time

import orjson

from simulator.errors import ApiError, BodyTooLarge

MAX_BODY_BYTES = 1024 * 1024  # 1 MiB: larger bodies get 413
JSON_CONTENT_TYPE = (b"content-type", b"application/json")
# The request headers the simulator reads; the others are skipped without being decoded.
WANTED_HEADERS = frozenset((b"authorization", b"content-length", b"x-sim-operation", b"x-sim-fault"))


class Request:
    """One HTTP request: its scope, the ASGI channels and the headers the simulator reads."""

    __slots__ = ("scope", "receive", "send", "method", "path", "headers", "received_at")

    def __init__(self, scope: dict, receive, send) -> None:
        # Replayed delays count from here, so the simulator's own work is inside them, not added on top.
        self.received_at = time.monotonic()
        self.scope = scope
        self.receive = receive
        self.send = send
        self.method = scope["method"]
        self.path = scope["path"]
        self.headers = {name: value.decode("latin-1") for name, value in scope["headers"] if name in WANTED_HEADERS}

    def client_host(self) -> str | None:
        """The client's address, or None if the server does not know it."""
        client = self.scope.get("client")
        return client[0] if client else None

    def bearer_token(self) -> str:
        """The token of `Authorization: Bearer <token>`, or "" without one."""
        value = self.headers.get(b"authorization", "")
        return value[7:].strip() if value[:7].lower() == "bearer " else ""

    async def body(self, limit: int = MAX_BODY_BYTES) -> bytes:
        """The whole request body; BodyTooLarge (413) past `limit` bytes, checked before reading when declared."""
        declared = self.headers.get(b"content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(f"The request body exceeds the limit of {limit} bytes.")
        chunks = []
        size = 0
        more_body = True
        while more_body:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(f"The request body exceeds the limit of {limit} bytes.")
            chunks.append(chunk)
            more_body = message.get("more_body", False)
        return b"".join(chunks)


async def send_json(send, status: int, payload, headers: list | tuple = ()) -> None:
    """Send a complete JSON response; the payload may be already-serialised bytes."""
    body = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [JSON_CONTENT_TYPE, (b"content-length", str(len(body)).encode()), *headers],
    })
    await send({"type": "http.response.body", "body": body})


async def send_error(send, error: ApiError) -> None:
    """Send an ApiError in OpenAI's error shape, with its own headers."""
    await send_json(send, error.status, error.body(), error.headers)


class StopSignal:
    """Set once, when the server stops: every waiting call wakes up instead of holding the shutdown."""

    def __init__(self) -> None:
        self.is_set = False
        self._future: asyncio.Future | None = None

    def future(self) -> asyncio.Future:
        """A future that completes when the signal is set (made on first use, inside the event loop)."""
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
            if self.is_set:
                self._future.set_result(None)
        return self._future

    def set(self) -> None:
        """Wake every waiting call."""
        self.is_set = True
        if self._future is not None and not self._future.done():
            self._future.set_result(None)


class ClientWatch:
    """Waits for a call's delay, but wakes early when the client hangs up or the server stops."""

    __slots__ = ("_receive", "_stop", "_waiter", "gone")

    def __init__(self, receive, stop: StopSignal) -> None:
        self._receive = receive
        self._stop = stop
        self._waiter: asyncio.Future | None = None
        self.gone = False

    async def wait_until(self, deadline: float) -> bool:
        """Wait until time.monotonic() reaches `deadline`; False at once if the client leaves or the server stops."""
        if self.gone or self._stop.is_set:
            return False
        seconds = deadline - time.monotonic()
        if seconds <= 0:
            return True
        if self._waiter is None:
            self._waiter = asyncio.ensure_future(self._wait_for_disconnect())
        done, _ = await asyncio.wait((self._waiter, self._stop.future()), timeout=seconds,
                                     return_when=asyncio.FIRST_COMPLETED)
        self.gone = self._waiter in done
        return not done

    async def _wait_for_disconnect(self) -> None:
        """Return when the server reports that the client went away."""
        while (await self._receive())["type"] != "http.disconnect":
            pass

    def close(self) -> None:
        """Stop watching (call when the answer is sent)."""
        if self._waiter is not None:
            self._waiter.cancel()
            # Dropping the task breaks the cycle watch -> task -> traceback -> frame -> watch,
            # which otherwise left garbage that stalled the event loop in full collections.
            self._waiter = None
