"""Watch the server wait, live: `python -m scripts.watch`, then open the address it prints.

One page, on this machine only, shows the last 60 s several times a second: /health as timed here,
the event loop's lag, the threads and DB connections the API holds, the provider calls in flight
and the simulator's quota, and the tickets per second by outcome. Run it beside a running lab,
then make the API stall (`python -m scripts.stall`, Locust, `python -m scripts.burst`).
"""

import argparse
import asyncio
import socket
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from scripts.toolkit.cli import CommandError, run
from scripts.toolkit.watcher import Watcher, watching

PAGE = Path(__file__).resolve().parent / "toolkit" / "watch_page.html"
DEFAULT_API = "http://127.0.0.1:8000"
DEFAULT_SIMULATOR = "http://127.0.0.1:8100"
DEFAULT_PORT = 8300


def page_app(watcher: Watcher) -> Starlette:
    """The page and its data; the page asks only this server, never the API."""

    async def page(request: Request) -> HTMLResponse:
        """The page: one HTML file, its script and style inline, no CDN."""
        return HTMLResponse(PAGE.read_text(encoding="utf-8"))

    async def series(request: Request) -> JSONResponse:
        """The window's rows and the header the API names itself with."""
        return JSONResponse(
            {
                "api": watcher.api_url,
                "simulator": watcher.simulator_url,
                "header": watcher.header,
                "window_s": watcher.window_s,
                "rows": watcher.rows(),
            },
            headers={"Cache-Control": "no-store"},
        )

    return Starlette(routes=[Route("/", page), Route("/series", series)])


def listen(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:port (0: a free port), or CommandError."""
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise CommandError(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}): choose another --port") from None
    return sock


async def serve(api_url: str, simulator_url: str, sock: socket.socket) -> None:
    """Probe the lab and serve the page until interrupted."""
    async with watching(api_url, simulator_url) as watcher:
        config = uvicorn.Config(
            page_app(watcher), loop="asyncio", log_level="warning", access_log=False, lifespan="off"
        )
        await uvicorn.Server(config).serve(sockets=[sock])


def main(argv: list[str] | None = None) -> int:
    """Serve the page; print its address."""
    parser = argparse.ArgumentParser(
        prog="python -m scripts.watch", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--api", default=DEFAULT_API, help="the API (default %(default)s)")
    parser.add_argument("--simulator", default=DEFAULT_SIMULATOR, help="the simulator (default %(default)s)")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help="the page's port on 127.0.0.1 (default %(default)s; 0: any free port)",
    )
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port {args.port}: give a number from 0 to 65535")
    sock = listen(args.port)
    print(f"watching {args.api} and {args.simulator}: open http://127.0.0.1:{sock.getsockname()[1]}/", flush=True)
    asyncio.run(serve(args.api, args.simulator, sock))
    return 0


if __name__ == "__main__":
    run(main)
