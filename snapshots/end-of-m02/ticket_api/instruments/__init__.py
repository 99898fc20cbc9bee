"""The lab's instruments: what the API shows of itself while it works, and the plumbing the lessons never open.

| module           | what it shows or does                                               | where you see it          |
| ---------------- | ------------------------------------------------------------------- | ------------------------- |
| requestlog.py    | a line per request, `POST /v1/tickets 201 2337ms queries=7 id=...`; | the API's log; each       |
|                  | Server-Timing and X-Provider-Calls                                  | answer's headers          |
| metrics.py       | threads, DB connections, provider calls, tickets, the loop's lag    | GET /metrics              |
| watchdog.py      | the line that blocks the event loop, while it blocks                | the API's log             |
| workers.py       | several workers (`fastapi run --workers 2`) counted as one server   | GET /metrics; the log     |
| body_limit.py    | 413 body_too_large for a request body over 64 KiB                   | the answer                |
| error_answers.py | every error as `{"error": CODE, "detail": TEXT}`, never a traceback | the answer; /docs         |
| startup.py       | a failure, a bad setting or a silent provider, in one line          | the API's log             |
| connections.py   | 503 db_busy or db_unavailable; a connection checked after a restart | the answer                |
| embedded.py      | the embedded PostgreSQL in .lab/pgdata, when DATABASE_URL is unset  | python -m scripts.db      |

`main.py` plugs them in with one call, `instruments.plug_into(app)`; `Instruments(metrics=False, ...)` leaves some out.
"""

import gc
from collections.abc import Awaitable
from dataclasses import dataclass

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticket_api.instruments.body_limit import BodyLimit
from ticket_api.instruments.requestlog import RequestLog, configure_logging, set_log_level
from ticket_api.instruments.startup import one_line_failure
from ticket_api.instruments.watchdog import LoopWatchdog, announce_event_loop
from ticket_api.instruments.workers import share_metrics

GC_YOUNG_THRESHOLD = 10_000  # new objects per young garbage-collector pass (Python's default: 700)


@dataclass(frozen=True)
class Instruments:
    """The instruments an app carries: every one, unless told otherwise."""

    request_log: bool = True
    metrics: bool = True
    watchdog: bool = True
    body_limit: bool = True
    gc_settings: bool = True

    def plug_into(self, app: FastAPI) -> None:
        """Add the instruments' middleware and routes to the app; they start and stop with its lifespan."""
        metrics = None
        if self.metrics:
            # Before prometheus_client is imported: it chooses then whether the workers of a server count together.
            share_metrics()
            from ticket_api.instruments.metrics import Metrics

            metrics = Metrics(app.state)
            app.add_api_route("/metrics", metrics.page, include_in_schema=False)
        if self.body_limit:
            app.add_middleware(BodyLimit)
        if self.request_log:
            app.add_middleware(RequestLog, metrics=metrics)
        app.add_middleware(Lifetime, instruments=self, metrics=metrics)


ALL = Instruments()


class Lifetime:
    """ASGI middleware around the app's lifespan: the instruments start once the app has started (its settings,
    database and provider made) and stop once it has stopped; a start-up failure is told in one line."""

    def __init__(self, app: ASGIApp, instruments: Instruments, metrics=None):
        self.app = app
        self.instruments = instruments
        self.metrics = metrics

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # A request goes straight to the app, with no frame of this middleware in its await chain: each time a waiting
        # request resumes, every frame of that chain runs again.
        return self.lifespan(scope, receive, send) if scope["type"] == "lifespan" else self.app(scope, receive, send)

    async def lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app's lifespan, the instruments started after its start-up and stopped after its shut-down."""
        configure_logging()
        watchdog = None

        async def send_and_follow(message: Message) -> None:
            nonlocal watchdog
            if message["type"] == "lifespan.startup.complete":
                watchdog = self.start(scope["app"].state.settings)
            elif message["type"] == "lifespan.startup.failed":
                message = one_line_failure(message)
            elif message["type"] == "lifespan.shutdown.complete":
                if watchdog is not None:
                    await watchdog.stop()
                if self.metrics is not None:
                    self.metrics.stop()
            await send(message)

        await self.app(scope, receive, send_and_follow)

    def start(self, settings) -> LoopWatchdog | None:
        """Start the instruments, on the running event loop; the watchdog, if any, to stop at the end."""
        set_log_level(settings.log_level)
        announce_event_loop()
        if self.metrics is not None:
            self.metrics.start()
        if self.instruments.gc_settings:
            # Each garbage-collector pass stops the event loop while it walks what the waiting tickets hold:
            # what exists now lives as long as the app (frozen, out of every pass), and passes come less often.
            gc.freeze()
            gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        if not self.instruments.watchdog:
            return None
        watchdog = LoopWatchdog(settings.loop_watchdog_ms, on_lag=self.metrics.heartbeat if self.metrics else None)
        watchdog.start()
        return watchdog
