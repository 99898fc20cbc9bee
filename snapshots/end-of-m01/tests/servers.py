"""A real uvicorn server in a thread, for tests that need real HTTP and real concurrency."""

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from scripts.toolkit.lab import KEEP_ALIVE_S, LIMIT_CONCURRENCY


@contextmanager
def serve(app) -> Iterator[str]:
    """Run the app on a real uvicorn server in a thread, on a free 127.0.0.1 port; yields its URL."""
    # IPPROTO_TCP, not socket()'s 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on a socket that says
    # TCP, and with it on, an answer written in two parts waits for the client's delayed ACK (40 ms on Linux).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    # asyncio's own loop, as the course measured: uvicorn's default would take uvloop when it is installed.
    # The same bounds as the lab's runners give the API (scripts/toolkit/lab.py).
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        loop="asyncio",
        limit_concurrency=LIMIT_CONCURRENCY,
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
