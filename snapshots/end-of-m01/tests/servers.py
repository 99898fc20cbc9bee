"""A real uvicorn server in a thread, for tests that need real HTTP and real concurrency."""

from collections.abc import Iterator
from contextlib import contextmanager

from scripts.toolkit.processes import serve_in_thread
from scripts.toolkit.services import KEEP_ALIVE_S, LIMIT_CONCURRENCY


@contextmanager
def serve(app) -> Iterator[str]:
    """Run the app on a real uvicorn server in a thread, on a free 127.0.0.1 port; yields its URL.

    The same bounds as the lab's runners give the API (scripts/toolkit/services.py).
    """
    with serve_in_thread(
        app, lifespan="on", limit_concurrency=LIMIT_CONCURRENCY, timeout_keep_alive=KEEP_ALIVE_S
    ) as url:
        yield url
