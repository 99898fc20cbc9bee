"""The ticket API: `fastapi dev` serves `ticket_api.main:app`."""

from contextlib import asynccontextmanager

from anyio import to_thread
from fastapi import FastAPI

from ticket_api import intake, reading
from ticket_api.config import Settings, load_settings
from ticket_api.database import Database
from ticket_api.instruments import ALL, Instruments
from ticket_api.instruments.connections import release_dsn, resolve_dsn
from ticket_api.instruments.error_answers import install_error_handlers
from ticket_api.instruments.startup import warn_if_unreachable
from ticket_api.provider import Provider


def create_app(settings: Settings | None = None, provider=None, instruments: Instruments = ALL) -> FastAPI:
    """The API; tests pass their own settings and a provider with the same interface (FakeProvider)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        app.state.settings = settings or load_settings()
        to_thread.current_default_thread_limiter().total_tokens = app.state.settings.thread_limit
        dsn = await to_thread.run_sync(resolve_dsn, app.state.settings)
        app.state.db = Database(dsn, app.state.settings)
        app.state.provider = provider or Provider(app.state.settings)
        try:
            await to_thread.run_sync(app.state.db.open)
            if provider is None:
                await warn_if_unreachable(app.state.settings.provider_url)
            yield
        finally:
            if provider is None:
                app.state.provider.close()
            await to_thread.run_sync(app.state.db.close)
            await to_thread.run_sync(release_dsn, app.state.settings)

    app = FastAPI(title="Ticket API", lifespan=lifespan)
    install_error_handlers(app)
    app.include_router(intake.router)
    app.include_router(reading.router)
    instruments.plug_into(app)  # the request log, /metrics, the watchdog ...: ticket_api/instruments/

    @app.get("/health")
    async def health() -> dict:
        """Always `{"status": "ok"}`: no database, nothing awaited, so it shows only how free the loop is."""
        return {"status": "ok"}

    return app


app = create_app()
