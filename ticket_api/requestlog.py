"""One log line per request, its request id, and where its time went (Server-Timing, X-Provider-Calls)."""

import logging
import random
import re

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticket_api.timing import Timer, current_timer
from ticket_api.workers import several_workers

log = logging.getLogger("ticket_api")
VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


class RequestLog:
    """ASGI middleware that logs `POST /v1/tickets 201 8479ms queries=7 id=c5b2dd1547ab`.

    A pure ASGI middleware, as Starlette's docs show one, not FastAPI's `@app.middleware("http")`: that
    form (BaseHTTPMiddleware: a task and a memory stream per request) cost the event loop 0.6-0.8 ms
    more CPU a ticket than this one, which costs 0.1-0.2 ms (ticket_api/README.md, "Performance").
    """

    def __init__(self, app: ASGIApp, metrics=None):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _request_id(scope)
        timer = Timer()
        token = current_timer.set(timer)
        status = 500

        async def send_with_headers(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = MutableHeaders(scope=message)
                headers.append("X-Request-ID", request_id)
                headers.append("Server-Timing", timer.server_timing())
                if timer.provider_calls:
                    headers.append("X-Provider-Calls", timer.provider_calls_header())
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        finally:
            current_timer.reset(token)
            if self.metrics is not None and timer.provider_calls:
                self.metrics.provider_calls.inc(len(timer.provider_calls))
            if self.metrics is not None and scope["method"] == "POST" and scope["path"] == "/v1/tickets":
                error_code = scope.get("state", {}).get("error_code", f"http_{status}")
                self.metrics.tickets.labels("created" if status == 201 else error_code).inc()
            log.info(
                "%s %s %d %.0fms queries=%d id=%s",
                scope["method"],
                scope["path"],
                status,
                timer.total_ms(),
                timer.queries,
                request_id,
            )


def _request_id(scope: Scope) -> str:
    """The client's X-Request-ID if it is safe to echo, else a new one."""
    candidate = Headers(scope=scope).get("x-request-id", "")
    if VALID_REQUEST_ID.fullmatch(candidate):
        return candidate
    return f"{random.getrandbits(48):012x}"  # unique enough to find a request; no need to be unguessable


def name_the_worker(record: logging.LogRecord) -> bool:
    """A logging filter that lets every line through, naming its worker if the server has several."""
    record.worker = f" [worker {record.process}]" if several_workers() else ""
    return True


def configure_logging(level: str) -> None:
    """Show our request lines and the HTTP client's per-call lines; uvicorn's access lines are ours now.

    A worker of several names itself in each line: `INFO ticket_api [worker 4242]: POST /v1/tickets 201 ...`.
    """
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.addFilter(name_the_worker)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s%(worker)s: %(message)s"))
        root.addHandler(handler)
    for name in ("ticket_api", "httpx"):
        logging.getLogger(name).setLevel(level)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)
