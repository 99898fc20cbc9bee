"""Watch the server wait, live: `python -m scripts.watch`, then open the address it prints.

One page, on this machine only, shows the last 60 s several times a second: /health as timed here,
the event loop's lag, the threads and DB connections the API holds, the provider calls in flight
and the simulator's quota, and the tickets per second by outcome. Run it beside a running lab,
then make the API stall (`python -m scripts.stall`, Locust, `python -m scripts.burst`).
"""

import threading
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from scripts.stall import DEFAULT_URL
from scripts.toolkit.cli import command_parser, run
from scripts.toolkit.measure.held_series import Watcher, watching_in_thread
from scripts.toolkit.processes import serve_in_thread

PAGE = Path(__file__).resolve().parent / "toolkit" / "reports" / "watch_page.html"
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


def main(argv: list[str] | None = None) -> int:
    """Serve the page; print its address."""
    parser = command_parser("python -m scripts.watch", __doc__)
    parser.add_argument("--api", default=DEFAULT_URL, help="the API (default %(default)s)")
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
    with (
        watching_in_thread(args.api, args.simulator) as watcher,
        serve_in_thread(page_app(watcher), args.port, lifespan="off") as url,
    ):
        print(f"watching {args.api} and {args.simulator}: open {url}/", flush=True)
        threading.Event().wait()  # until Ctrl+C or SIGTERM
    return 0


if __name__ == "__main__":
    run(main)
