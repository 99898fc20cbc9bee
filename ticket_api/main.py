"""The ticket API: `fastapi dev` serves `ticket_api.main:app`."""

import gc
import logging
from contextlib import asynccontextmanager

from ticket_api.workers import share_metrics

# Before prometheus_client is imported (by the modules below): it chooses then whether the workers of a server
# count together (ticket_api/workers.py).
share_metrics()

import httpx
from anyio import to_thread
from fastapi import FastAPI, Request, Response

from ticket_api import intake, reading
from ticket_api.config import Settings, load_settings
from ticket_api.database import Database, release_dsn, resolve_dsn
from ticket_api.errors import describe, install_error_handlers
from ticket_api.metrics import Metrics
from ticket_api.middleware import BodyLimit, OneLineStartupErrors
from ticket_api.provider import Provider
from ticket_api.requestlog import RequestLog, configure_logging
from ticket_api.watchdog import LoopWatchdog, announce_event_loop

log = logging.getLogger("ticket_api")
MAX_BODY_BYTES = 64 * 1024  # a ticket is at most ~5 KB of JSON; larger bodies get 413
GC_YOUNG_THRESHOLD = 10_000  # new objects per young garbage-collector pass (Python's default: 700)


def create_app(settings: Settings | None = None, provider=None) -> FastAPI:
    """The API; tests pass their own settings and a provider with the same interface (FakeProvider)."""
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.settings = settings or load_settings()
        configure_logging(app.state.settings.log_level)
        announce_event_loop()
        metrics.start()
        to_thread.current_default_thread_limiter().total_tokens = app.state.settings.thread_limit
        dsn = await to_thread.run_sync(resolve_dsn, app.state.settings)
        app.state.db = Database(dsn, app.state.settings)
        app.state.provider = provider or Provider(app.state.settings)
        watchdog = LoopWatchdog(app.state.settings.loop_watchdog_ms, on_lag=metrics.heartbeat)
        try:
            await to_thread.run_sync(app.state.db.open)
            if provider is None:
                await warn_if_unreachable(app.state.settings.provider_url)
            watchdog.start()
            # Each garbage-collector pass stops the event loop while it walks what the waiting tickets hold:
            # what exists now lives as long as the app (frozen, out of every pass), and passes come less often.
            gc.freeze()
            gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
            yield
        finally:
            await watchdog.stop()
            metrics.stop()
            await app.state.provider.aclose()
            await to_thread.run_sync(app.state.db.close)
            await to_thread.run_sync(release_dsn, app.state.settings)

    app = FastAPI(title="Ticket API", lifespan=lifespan)
    app.state.metrics = metrics
    metrics.watch(app.state)
    install_error_handlers(app)
    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)
    app.add_middleware(RequestLog, metrics=metrics)
    app.add_middleware(OneLineStartupErrors)
    app.include_router(intake.router)
    app.include_router(reading.router)

    @app.get("/health")
    async def health() -> dict:
        """Always `{"status": "ok"}`: no database, nothing awaited, so it shows only how free the loop is."""
        return {"status": "ok"}

    @app.get("/metrics", include_in_schema=False)
    async def metrics_page(request: Request) -> Response:
        """The metrics in Prometheus text format."""
        return Response(metrics.render(), media_type="text/plain; version=0.0.4")

    return app


async def warn_if_unreachable(provider_url: str) -> None:
    """A WARNING line if nothing answers at the provider's address; the API starts anyway (it may come later)."""
    try:
        async with httpx.AsyncClient(timeout=1.0) as client:
            await client.get(provider_url)
    except httpx.TransportError as exc:
        reason = describe(exc)
        log.warning("the AI provider at %s does not answer (%s): tickets get 502 ai_unavailable", provider_url, reason)


app = create_app()
