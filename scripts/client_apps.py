"""The ticket API with another async client under `provider.acall` (experiment 9's three, and the bench's choice), and
the API without some of its instruments (the bench's measure of what they cost).

`uvicorn --factory scripts.client_apps:httpx_app` serves the API on httpx 0.28's own pool, `httpx2_app` on httpx2's
(httpx's maintained fork, the same API under another name); the course's client, httpx over httpx-aiohttp's transport,
is the API's own (`ticket_api.main:create_app`). Each client comes through the Provider's public `async_client`, as
the tests' transport does: the student's provider.py holds the course's client only. It translates httpx's errors,
not httpx2's: with httpx2 a provider that is down or slow gives 500 `internal_error`, not 502 or 504 (the
experiment measures a healthy provider).
"""

import logging
import os
from dataclasses import fields

import httpx
import httpx2
from fastapi import FastAPI

from ticket_api.config import Settings, load_settings
from ticket_api.instruments import Instruments
from ticket_api.main import create_app
from ticket_api.provider import Provider, client_options

# name: (what it is, the factory that serves the API on it)
CLIENTS = {
    "httpx": ("httpx 0.28's own pool", "scripts.client_apps:httpx_app"),
    "httpx2": ("httpx2's own pool", "scripts.client_apps:httpx2_app"),
    "aiohttp": ("httpx over httpx-aiohttp", "ticket_api.main:create_app"),
}
WITHOUT = "LAB_INSTRUMENTS_OFF"  # the instruments the app leaves out, by Instruments' field names: `all` for every one
INSTRUMENTS = [field.name for field in fields(Instruments)]


def httpx_client(settings: Settings) -> httpx.AsyncClient:
    """httpx's AsyncClient on its own pool (httpcore), with provider.py's options."""
    return httpx.AsyncClient(**client_options(settings))


def httpx2_client(settings: Settings) -> httpx2.AsyncClient:
    """httpx2's AsyncClient on its own pool (httpcore2), with provider.py's options in httpx2's classes."""
    options = client_options(settings)
    limits, timeout = options["limits"], options["timeout"]
    return httpx2.AsyncClient(
        base_url=options["base_url"],
        headers=options["headers"],
        limits=httpx2.Limits(
            max_connections=limits.max_connections, max_keepalive_connections=limits.max_keepalive_connections
        ),
        timeout=httpx2.Timeout(timeout.read, connect=timeout.connect),
    )


def httpx_app() -> FastAPI:
    """The API with httpx's own pool under `provider.acall` (uvicorn --factory)."""
    settings = load_settings()
    return create_app(settings, Provider(settings, async_client=httpx_client(settings)))


def httpx2_app() -> FastAPI:
    """The API with httpx2's own pool under `provider.acall` (uvicorn --factory); its calls logged as httpx's are."""
    settings = load_settings()
    logging.getLogger("httpx2").setLevel(settings.log_level)
    return create_app(settings, Provider(settings, async_client=httpx2_client(settings)))


def without_instruments() -> FastAPI:
    """The API without the instruments LAB_INSTRUMENTS_OFF names (uvicorn --factory): the same routes, modes and I/O."""
    off = os.environ.get(WITHOUT, "all")
    names = INSTRUMENTS if off == "all" else [name.strip() for name in off.split(",") if name.strip()]
    if unknown := set(names) - set(INSTRUMENTS):
        raise SystemExit(f"{WITHOUT}={off!r}: {', '.join(sorted(unknown))} is none of {', '.join(INSTRUMENTS)}")
    return create_app(instruments=Instruments(**dict.fromkeys(names, False)))
