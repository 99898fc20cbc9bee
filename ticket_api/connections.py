"""Limits on what a client can hold of the server: connections, bytes of request head, seconds to send a request.

    HTTP_MAX_CONNECTIONS   one connection more: 503 `too_many_connections`, and closed
    HTTP_MAX_HEADER_BYTES  a longer request line and headers: 431 `headers_too_large`, and closed
    HTTP_HEADER_TIMEOUT_S  no whole request head that long after the connection opened or the last
                           answer: 408 `request_timeout`, and closed
    HTTP_BODY_TIMEOUT_S    no whole body that long after its head: 408 `request_timeout`, and closed

None of them can be ASGI middleware: the app sees a request only once its head has arrived. They
belong to uvicorn's HTTP protocol, the object that reads one connection. uvicorn picks its class
(httptools' parser if installed, else h11's) before it imports the app, and `fastapi dev` passes no
options; so the app steps in at the one moment it can: its start-up, which uvicorn runs before it
listens. There `limit_server` finds the server's Config and swaps the class it chose for a subclass
with the limits. That covers `fastapi dev`, `fastapi run`, `uvicorn ticket_api.main:app`, the lab's
runners and the tests' servers (not `--lifespan off`), and no other server of the process. Each
worker process counts its own connections.
"""

import asyncio
import logging
from http import HTTPStatus
from typing import TYPE_CHECKING

import orjson
import uvicorn

from ticket_api.config import Settings

try:
    import resource
except ImportError:  # Windows: no open-files limit to raise
    resource = None  # type: ignore[assignment]  # None stands for the missing module

log = logging.getLogger("ticket_api.connections")
FILES_PER_CONNECTION = 2  # the client's socket, and the provider call it may wait on
FILES_RESERVE = 256  # the database pool, logs, the libraries' own files
ANSWERS = {  # what a client gets when it passes a limit: status, error code, detail
    "too_many": (
        503,
        "too_many_connections",
        "more than {http_max_connections:,} connections are open (HTTP_MAX_CONNECTIONS); retry later",
    ),
    "too_large": (
        431,
        "headers_too_large",
        "the request line and headers are over {http_max_header_bytes:,} bytes (HTTP_MAX_HEADER_BYTES)",
    ),
    "head": (
        408,
        "request_timeout",
        "no whole request head within {http_header_timeout_s:g} s (HTTP_HEADER_TIMEOUT_S)",
    ),
    "body": (408, "request_timeout", "no whole request body within {http_body_timeout_s:g} s (HTTP_BODY_TIMEOUT_S)"),
}


def limit_server(settings: Settings) -> None:
    """Called at start-up: give the uvicorn server that runs the app the limits, and enough open files for them."""
    config = serving_config()
    if config is None:
        return  # not under uvicorn (a test client): no connections to limit
    parser = next((base for base in parser_protocols() if issubclass(config.http_protocol_class, base)), None)
    if parser is None:
        log.warning(
            "no connection limits: uvicorn runs %s, not its h11 or httptools protocol",
            config.http_protocol_class.__name__,
        )
        return

    # The base is found at run time (h11's or httptools' protocol), which mypy cannot follow.
    class LimitedProtocol(LimitedConnection, parser):  # type: ignore[valid-type, misc]
        """uvicorn's protocol, with the limits of these settings."""

    LimitedProtocol.settings = settings
    LimitedProtocol.answers = {
        name: (status, code, detail.format(**dict(settings))) for name, (status, code, detail) in ANSWERS.items()
    }
    config.http_protocol_class = LimitedProtocol  # read by the server for every new connection
    config.h11_max_incomplete_event_size = settings.http_max_header_bytes  # h11 stops where we do
    raise_open_files_limit(FILES_PER_CONNECTION * settings.http_max_connections + FILES_RESERVE)


def serving_config() -> uvicorn.Config | None:
    """The Config of the uvicorn server whose start-up runs now, or None.

    uvicorn runs the app's start-up in a task of its own, `LifespanOn.main()`, and that object
    holds the server's Config.
    """
    task = asyncio.current_task()
    frame = getattr(task.get_coro(), "cr_frame", None) if task is not None else None
    config = getattr(frame.f_locals.get("self"), "config", None) if frame is not None else None
    return config if isinstance(config, uvicorn.Config) else None


def parser_protocols() -> tuple[type, ...]:
    """uvicorn's HTTP/1.1 protocol classes that are installed: h11's always, httptools' if httptools is."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return (H11Protocol,)
    return (H11Protocol, HttpToolsProtocol)


if TYPE_CHECKING:  # what the mixin relies on; h11's and httptools' protocols both have it
    from uvicorn.protocols.http.h11_impl import H11Protocol as UvicornProtocol
else:
    UvicornProtocol = object


class LimitedConnection(UvicornProtocol):
    """Mixed into uvicorn's H11Protocol or HttpToolsProtocol: the limits, for one connection.

    Both keep the request being served in `self.cycle`, a new one for each request head they parse,
    and start the app for it with `self.app`.
    """

    settings: Settings
    answers: dict[str, tuple[int, str, str]]  # ANSWERS with the settings' figures in

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.awaiting: str | None = None  # "head" or "body" while the client owes us one
        self.head_bytes = 0
        self.deadline = 0.0  # by when, on the loop's clock
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        if len(self.connections) > self.settings.http_max_connections:
            self.connections.discard(self)
            self.reply("too_many")
            return
        self.expect("head", self.settings.http_header_timeout_s)

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        if self.awaiting == "head":
            self.head_bytes += len(data)
            if self.head_bytes > self.settings.http_max_header_bytes:
                # If the head ends in this read, the parser starts the app for it before we could count
                # its bytes: start it through a check of the parsed size instead.
                self.app = self.app_within_header_limit
        super().data_received(data)
        self.app = self.config.loaded_app
        if self.transport.is_closing():
            return
        if self.cycle is not cycle:  # a request head was parsed
            self.expect("body" if self.cycle.more_body else None, self.settings.http_body_timeout_s)
        elif self.awaiting == "head" and self.head_bytes > self.settings.http_max_header_bytes:
            self.reply("too_large")  # and still no end of the head: stop buffering it
        elif self.awaiting == "body" and not self.cycle.more_body:
            self.expect(None)

    def send_400_response(self, msg: str) -> None:
        if self.awaiting == "head" and self.head_bytes > self.settings.http_max_header_bytes:
            self.reply("too_large")  # h11's own limit, set to ours, said it first
        else:
            super().send_400_response(msg)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing() or not self.cycle.response_complete:
            return  # closing, or a pipelined request under way
        if self.cycle.more_body:
            # Answered before its body was all in (413 body_too_large): the rest is not worth reading,
            # and what comes next could not be told from it.
            self.transport.close()
        else:
            self.expect("head", self.settings.http_header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self.expect(None)
        if self.timer is not None:
            self.timer.cancel()
        super().connection_lost(exc)

    async def app_within_header_limit(self, scope, receive, send) -> None:
        """The app, once the parsed request line and headers are found within the limit."""
        size = len(scope["raw_path"]) + len(scope["query_string"])
        size += sum(len(name) + len(value) + 4 for name, value in scope["headers"])  # "name: value\r\n"
        if size > self.settings.http_max_header_bytes:
            self.reply("too_large")
            return
        await self.config.loaded_app(scope, receive, send)

    def expect(self, awaiting: str | None, timeout_s: float = 0.0) -> None:
        """Wait for the client's request head or body until a deadline (None: wait for nothing)."""
        self.awaiting, self.head_bytes = awaiting, 0
        if awaiting is not None:
            self.deadline = self.loop.time() + timeout_s
            if self.timer is None:  # one timer per connection, moved lazily: no timer per request
                self.timer = self.loop.call_at(self.deadline, self.on_timer)

    def on_timer(self) -> None:
        # A loop blocked on purpose (INTAKE_MODE=blocking) does not make its clients late: asyncio and
        # uvloop both read what arrived meanwhile before they run a timer that fell due.
        self.timer = None
        if self.awaiting is None:
            return
        if self.loop.time() < self.deadline:  # moved since this timer was set
            self.timer = self.loop.call_at(self.deadline, self.on_timer)
        elif self.awaiting == "body" and self.cycle.response_started:
            self.transport.close()  # the app answered already; the rest of the body will never come
        else:
            self.reply(self.awaiting)

    def reply(self, answer: str) -> None:
        """Answer with one of ANSWERS (the app never sees them) and close the connection."""
        self.expect(None)
        status, code, detail = self.answers[answer]
        log.log(logging.WARNING if answer == "too_many" else logging.INFO, "%s %s: %s", status, code, detail)
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the app, if it runs, must not answer after us
        body = orjson.dumps({"error": code, "detail": detail})
        retry_after = "retry-after: 1\r\n" if status == 503 else ""
        self.transport.write(
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n{retry_after}\r\n".encode()
            + body
        )
        self.transport.close()


def raise_open_files_limit(needed: int) -> None:
    """Raise this process's soft limit of open files to `needed` (up to the hard limit); a WARNING if short."""
    if resource is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        target = soft
    if target < needed:
        log.warning(
            "the open-files limit is %s, under the %s that HTTP_MAX_CONNECTIONS needs: "
            "raise it (ulimit -n) or lower HTTP_MAX_CONNECTIONS",
            target,
            needed,
        )
