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
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [JSON_CONTENT_TYPE, (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def send_error(send, error: ApiError) -> None:
    """Send an ApiError in OpenAI's error shape, with its own headers."""
    await send_json(send, error.status, error.body(), error.headers)


class StopSignal:
    """Set once, when the server stops: every waiting call wakes up instead of holding the shutdown."""

    def __init__(self) -> None:
        self.is_set = False
        self.waiting: set[ClientWatch] = set()

    def set(self) -> None:
        """Wake every waiting call."""
        self.is_set = True
        for watch in self.waiting:
            watch.wake()


class ClientWatch:
    """Waits for a call's delay, but wakes early when the client hangs up or the server stops.

    The call's own task awaits the client's disconnect under a timeout set to the deadline: no
    second task per call, and no future shared by all calls (removing a callback from a shared
    future scans every waiting call's). A waiting call keeps few objects alive, because the
    garbage collector's young passes walk them all while the event loop stands still.
    """

    __slots__ = ("_receive", "_stop", "_timeout", "gone")

    def __init__(self, receive, stop: StopSignal) -> None:
        self._receive = receive
        self._stop = stop
        self._timeout: asyncio.Timeout | None = None
        self.gone = False

    async def wait_until(self, deadline: float) -> bool:
        """Wait until time.monotonic() reaches `deadline`; False at once if the client leaves or the server stops."""
        if self.gone or self._stop.is_set:
            return False
        seconds = deadline - time.monotonic()
        if seconds <= 0:
            return True
        self._stop.waiting.add(self)
        try:
            async with asyncio.timeout(seconds) as self._timeout:
                while (await self._receive())["type"] != "http.disconnect":
                    pass
        except TimeoutError:
            return not self._stop.is_set
        finally:
            self._stop.waiting.discard(self)
            self._timeout = None
        self.gone = True
        return False

    def wake(self) -> None:
        """End the wait now, as if its deadline had come (the server is stopping)."""
        if self._timeout is not None and not self._timeout.expired():
            self._timeout.reschedule(asyncio.get_running_loop().time())
