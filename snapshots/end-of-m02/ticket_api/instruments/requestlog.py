"""The request log: one line per request, where its time went (Server-Timing, X-Provider-Calls) and its query count.

`POST /v1/tickets 201 2337ms queries=7 id=233edc2765a2`: each request gets a Timer, which the code under it reaches
through `current_timer` (the routes' `timer("db")`, the provider's calls, the connections' statements).
"""

import logging
import random
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticket_api.instruments.workers import several_workers

log = logging.getLogger("ticket_api")
VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
BUCKETS = ("db", "ai")


class Timer:
    """Per-request timer: `with timer("db"): ...` adds the block's time to the bucket `db`.

    Blocks nest: time spent in an inner block counts for the inner bucket only.
    """

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.spent_ms = dict.fromkeys(BUCKETS, 0.0)
        self.queries = 0
        self.provider_calls: list[tuple[float, float]] = []  # (start, end) on the perf_counter clock
        self._inner_ms = 0.0

    @contextmanager
    def __call__(self, bucket: str) -> Iterator[None]:
        started, inner_before = time.perf_counter(), self._inner_ms
        self._inner_ms = 0.0
        try:
            yield
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            self.spent_ms[bucket] += elapsed - self._inner_ms
            self._inner_ms = inner_before + elapsed

    def total_ms(self) -> float:
        """Milliseconds since the request started."""
        return (time.perf_counter() - self.started) * 1000

    def server_timing(self) -> str:
        """The buckets as a standard Server-Timing header value; `other` is what the buckets miss."""
        total = self.total_ms()
        other = max(0.0, total - sum(self.spent_ms.values()))
        parts = [f"{name};dur={ms:.1f}" for name, ms in self.spent_ms.items()]
        return ", ".join([*parts, f"other;dur={other:.1f}", f"total;dur={total:.1f}"])

    def provider_calls_header(self) -> str:
        """`start-end` of each provider call, in ms since the request started: `3.1-913.5, 915.0-2016.2, ...`."""
        return ", ".join(
            f"{(start - self.started) * 1000:.1f}-{(end - self.started) * 1000:.1f}"
            for start, end in self.provider_calls
        )


# Set by the request log; thread-pool calls see it too (run_in_threadpool copies the context).
current_timer: ContextVar[Timer | None] = ContextVar("current_timer", default=None)


class RequestLog:
    """ASGI middleware that logs `POST /v1/tickets 201 8479ms queries=7 id=c5b2dd1547ab`, and counts the tickets by
    outcome and the provider calls for /metrics.

    A pure ASGI middleware, as Starlette's docs show one, not FastAPI's `@app.middleware("http")`: that
    form (BaseHTTPMiddleware: a task and a memory stream per request) cost the event loop 0.6-0.8 ms
    more CPU a ticket than this one, which costs 0.1-0.2 ms.
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
            if self.metrics is not None:
                self.metrics.count_request(scope, status, len(timer.provider_calls))
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


def configure_logging() -> None:
    """Our lines, each naming its worker where the server has several: `INFO ticket_api [worker 4242]: POST ...`."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.addFilter(_name_the_worker)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s%(worker)s: %(message)s"))
        root.addHandler(handler)


def set_log_level(level: str) -> None:
    """Show our request lines and the HTTP client's per-call lines at `level`; uvicorn's access lines are ours now."""
    for name in ("ticket_api", "httpx"):
        logging.getLogger(name).setLevel(level)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)


def _name_the_worker(record: logging.LogRecord) -> bool:
    record.worker = f" [worker {record.process}]" if several_workers() else ""
    return True


def note_provider_call(started: float) -> None:
    """Note that a provider call of the current request ran from `started` (perf_counter) until now."""
    timer = current_timer.get()
    if timer is not None:
        timer.provider_calls.append((started, time.perf_counter()))


def _count_query() -> None:
    timer = current_timer.get()
    if timer is not None:
        timer.queries += 1


class CountingConnection(psycopg.Connection[DictRow]):
    """A connection that counts every statement it sends (`queries=N`): each of its `execute()`, the BEGIN psycopg
    sends before the first, COMMIT and ROLLBACK; its rows are dicts: `row["id"]`."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any):
        """psycopg's connect(), with rows as dicts and no prepared statements.

        psycopg prepares a statement after its fifth use, and after a ROLLBACK it then sends DEALLOCATE ALL,
        a statement no request made: without prepared statements, `queries=N` is exactly what the server got.
        """
        return super().connect(conninfo, row_factory=dict_row, prepare_threshold=None, **kwargs)

    def execute(self, query, params=None, **kwargs):
        """psycopg's execute(), counted; not the pool's check of a connection, an empty query."""
        if query != "":
            if not self.autocommit and self.info.transaction_status == TransactionStatus.IDLE:
                _count_query()  # BEGIN
            _count_query()
        return super().execute(query, params, **kwargs)

    def commit(self) -> None:
        """Commit, counted if there is a transaction to commit (psycopg sends nothing otherwise)."""
        if self.info.transaction_status != TransactionStatus.IDLE:
            _count_query()
        super().commit()

    def rollback(self) -> None:
        """Roll back, counted if there is a transaction to roll back (psycopg sends nothing otherwise)."""
        if self.info.transaction_status != TransactionStatus.IDLE:
            _count_query()
        super().rollback()


class InFlight:
    """A figure counted from any thread: `with in_flight:` counts the block in `now` while it runs, and in `so_far`."""

    def __init__(self) -> None:
        self.now = 0
        self.so_far = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.now += 1
            self.so_far += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self.now -= 1
