"""What bounds a client's hold on the API: uvicorn's own options, as the lab's runners pass them, and what they leave.

The runners (scripts/toolkit/running/apis.py) start uvicorn with `--limit-concurrency` and `--timeout-keep-alive`;
these tests hold a real API process to what those give, and to what ticket_api/README.md says they
do not bound (a request head's size under httptools, a client that never finishes its head).
"""

import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from urllib.parse import urlsplit

import pytest

from scripts.toolkit import processes, services
from scripts.toolkit.running import apis

LIMIT = 8  # --limit-concurrency of the API under test
KEEP_ALIVE_S = 1.0  # --timeout-keep-alive of the API under test


@pytest.fixture(scope="module")
def api(database_url: str, tmp_path_factory) -> Iterator[services.Service]:
    """The API with small bounds (no provider: these requests never reach it)."""
    service = apis.api(
        f"http://127.0.0.1:{processes.free_port()}/v1",
        env={"DATABASE_URL": database_url},
        log_dir=tmp_path_factory.mktemp("api"),
        limit_concurrency=LIMIT,
        keep_alive_s=KEEP_ALIVE_S,
    )
    with service:
        yield service


def connect(url: str) -> socket.socket:
    """A new TCP connection to the API."""
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def ask(sock: socket.socket, head: bytes = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n") -> tuple[int, bytes]:
    """Send one request on the connection; the status and the body of its whole answer."""
    sock.sendall(head)
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, received
        received += chunk
    head_part, _, body = received.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head_part.lower().split(b"\r\n") if b"content-length" in line)
    while len(body) < length:
        body += sock.recv(65536)
    return int(head_part.split()[1]), body


def seconds_until_closed(sock: socket.socket, within_s: float) -> float | None:
    """How long until the server closes the connection (None: still open after `within_s`)."""
    started = time.monotonic()
    sock.settimeout(within_s)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return time.monotonic() - started


def test_past_limit_concurrency_a_request_gets_uvicorns_503_until_connections_close(api):
    with ExitStack() as held:
        kept = [held.enter_context(connect(api.url)) for _ in range(LIMIT - 1)]
        assert [ask(sock)[0] for sock in kept] == [200] * (LIMIT - 1)  # each stays open, kept alive
        with connect(api.url) as one_more:  # uvicorn counts this one too: LIMIT connections
            status, body = ask(one_more)
        assert (status, body) == (503, b"Service Unavailable")  # uvicorn's own answer, before the app
    time.sleep(0.2)  # the server sees the connections close
    with connect(api.url) as sock:
        assert ask(sock)[0] == 200


@pytest.mark.timing
def test_an_idle_connection_is_closed_after_timeout_keep_alive(api):
    with connect(api.url) as sock:
        assert ask(sock)[0] == 200
        closed_after = seconds_until_closed(sock, within_s=10 * KEEP_ALIVE_S)
    assert closed_after is not None, "an idle connection was kept open"
    assert 0.8 * KEEP_ALIVE_S < closed_after < 5 * KEEP_ALIVE_S


def test_what_uvicorn_does_not_bound_a_connection_that_never_finishes_its_head(api):
    """The keep-alive timeout starts after an answer: a client that sends part of a head and waits keeps its
    connection (ticket_api/README.md: in production, a reverse proxy's client_header_timeout bounds it)."""
    with connect(api.url) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # no end of the head
        assert seconds_until_closed(sock, within_s=3 * KEEP_ALIVE_S) is None


def test_what_uvicorn_does_not_bound_a_large_request_head_under_httptools(api):
    """uvicorn's httptools protocol reads a head of any size (uvicorn issue 157; h11's stops at 16 KiB)."""
    pytest.importorskip("httptools", reason="uvicorn takes httptools when it is installed (uvicorn[standard])")
    with connect(api.url) as sock:
        status, _ = ask(sock, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n")
    assert status == 200
