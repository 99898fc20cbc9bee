"""The limits on what a client can hold of the API (ticket_api/connections.py), against real API processes.

Each limit is answered as the README documents, with either HTTP parser uvicorn may pick
(httptools when it is installed, h11 otherwise), and /health stays fast meanwhile.
"""

import importlib.util
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from urllib.parse import urlsplit

import httpx
import orjson
import psutil
import pytest

from scripts.toolkit import lab, processes
from tests.lab.reliability.reliability_testing import marked_ticket, rows_of

PARSERS = [
    pytest.param(
        "httptools",
        marks=pytest.mark.skipif(importlib.util.find_spec("httptools") is None, reason="httptools is not installed"),
    ),
    "h11",
]
LIMITS = {
    "HTTP_MAX_CONNECTIONS": "64",
    "HTTP_MAX_HEADER_BYTES": "16384",
    "HTTP_HEADER_TIMEOUT_S": "2",
    "HTTP_BODY_TIMEOUT_S": "2",
}
TIMEOUT_S = 2.0


@pytest.fixture(scope="module", params=PARSERS)
def api(request, database_url: str, tmp_path_factory) -> Iterator[processes.Service]:
    """The API under uvicorn with the parser of the param (UVICORN_HTTP) and short limits; no provider."""
    env = {"DATABASE_URL": database_url, "UVICORN_HTTP": request.param, "LOG_LEVEL": "INFO", **LIMITS}
    service = lab.api(f"http://127.0.0.1:{processes.free_port()}/v1", env=env, log_dir=tmp_path_factory.mktemp("api"))
    with service:
        assert parser_of(service.url) == request.param  # the parser asked for is the one that answers
        yield service


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname, parts.port


def parser_of(url: str) -> str:
    """Which parser answers: on a malformed request, uvicorn's httptools protocol sends a content-length, h11's not."""
    with socket.create_connection(address(url), timeout=5) as sock:
        sock.sendall(b"GARBAGE\r\n\r\n")
        return "httptools" if b"content-length" in read_all(sock).lower() else "h11"


def read_all(sock: socket.socket, timeout_s: float = 10) -> bytes:
    """Everything the server sends until it closes the connection (or `timeout_s` passes)."""
    sock.settimeout(timeout_s)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return received


def ask_health(sock: socket.socket) -> int:
    """GET /health over a kept-alive connection; the status of its whole answer."""
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    received = b""
    while b"\r\n\r\n" not in received or not received.endswith(b"}"):  # the JSON body is the end
        chunk = sock.recv(4096)
        assert chunk, received
        received += chunk
    return int(received.split()[1])


def answer(raw: bytes) -> tuple[int, dict]:
    """The status and the JSON body of a raw HTTP answer."""
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), orjson.loads(body)


def send_slowly(sock: socket.socket, data: bytes, every_s: float, for_s: float) -> None:
    """Send `data` a byte at a time, until it is sent or `for_s` passes or the server closes."""
    deadline = time.monotonic() + for_s
    for index in range(len(data)):
        if time.monotonic() > deadline:
            return
        try:
            sock.sendall(data[index : index + 1])
        except OSError:
            return
        time.sleep(every_s)


@pytest.mark.parametrize("pieces", [1, 40], ids=["in-one-read", "in-40-reads"])
def test_a_request_head_over_the_limit_is_431(api, pieces):
    head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n"
    with socket.create_connection(address(api.url), timeout=10) as sock:
        step = len(head) // pieces + 1
        for start in range(0, len(head), step):
            try:
                sock.sendall(head[start : start + step])
            except OSError:
                break  # answered and closed before the head was over
            time.sleep(0.01 if pieces > 1 else 0)
        status, body = answer(read_all(sock))
    assert (status, body["error"]) == (431, "headers_too_large")
    assert "HTTP_MAX_HEADER_BYTES" in body["detail"]
    under = httpx.get(f"{api.url}/health", headers={"X-Big": "a" * 15_000}, timeout=10)
    assert under.status_code == 200


def test_a_connection_that_sends_nothing_gets_408_after_the_header_timeout(api):
    started = time.monotonic()
    with socket.create_connection(address(api.url), timeout=10) as sock:
        status, body = answer(read_all(sock))
    assert (status, body["error"]) == (408, "request_timeout")
    assert "HTTP_HEADER_TIMEOUT_S" in body["detail"]
    assert TIMEOUT_S <= time.monotonic() - started < TIMEOUT_S + 3


def test_a_head_sent_a_byte_at_a_time_is_cut_off_after_the_header_timeout(api):
    started = time.monotonic()
    with socket.create_connection(address(api.url), timeout=10) as sock:
        send_slowly(sock, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100, every_s=0.1, for_s=8)
        status, body = answer(read_all(sock))
    assert (status, body["error"]) == (408, "request_timeout")
    assert TIMEOUT_S <= time.monotonic() - started < TIMEOUT_S + 3


def test_a_body_sent_a_byte_at_a_time_is_cut_off_after_the_body_timeout_and_saves_nothing(api, customer_id, db_conn):
    ticket = marked_ticket(customer_id)
    body = orjson.dumps(ticket)
    head = (
        f"POST /v1/tickets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    started = time.monotonic()
    with socket.create_connection(address(api.url), timeout=10) as sock:
        sock.sendall(head)
        send_slowly(sock, body, every_s=0.1, for_s=8)
        status, answered = answer(read_all(sock))
    assert (status, answered["error"]) == (408, "request_timeout")
    assert "HTTP_BODY_TIMEOUT_S" in answered["detail"]
    assert TIMEOUT_S <= time.monotonic() - started < TIMEOUT_S + 3
    assert rows_of(db_conn, ticket) == []
    deadline = time.monotonic() + 5
    while "POST /v1/tickets 499" not in api.log_path.read_text():  # the request log says what happened
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_one_connection_over_the_limit_gets_503_and_idle_keep_alive_ones_count(api):
    limit = int(LIMITS["HTTP_MAX_CONNECTIONS"])
    with ExitStack() as stack_of_sockets:
        held = [
            stack_of_sockets.enter_context(socket.create_connection(address(api.url), timeout=5)) for _ in range(limit)
        ]
        for sock in held[: limit // 2]:  # half of them asked once and now wait, kept alive
            assert ask_health(sock) == 200
        refused = httpx.get(f"{api.url}/health", timeout=5)
        assert (refused.status_code, refused.json()["error"]) == (503, "too_many_connections")
        assert refused.headers["Retry-After"] == "1"
        assert ask_health(held[0]) == 200  # those within the limit are still served
    deadline = time.monotonic() + 5
    while httpx.get(f"{api.url}/health", timeout=5).status_code != 200:  # the server has seen them close
        assert time.monotonic() < deadline
        time.sleep(0.05)


@contextmanager
def health_times(url: str) -> Iterator[list[float]]:
    """Ask /health every 20 ms over a connection opened first; yields the list of times (ms) it fills."""
    times: list[float] = []
    connected, stop = threading.Event(), threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=url, timeout=10) as client:
            client.get("/health")
            connected.set()
            while not stop.is_set():
                started = time.perf_counter()
                assert client.get("/health").status_code == 200
                times.append((time.perf_counter() - started) * 1000)
                stop.wait(0.02)

    prober = threading.Thread(target=probe)
    prober.start()
    connected.wait(10)
    try:
        yield times
    finally:
        stop.set()
        prober.join()


def test_health_stays_fast_while_clients_push_against_every_limit(api):
    """Big heads, silent connections past the limit, slow heads and bodies, all at once."""
    with health_times(api.url) as alone:
        time.sleep(1)
    api_process = psutil.Process(api.process.pid)
    memory_before = api_process.memory_info().rss
    cut_off: list[bool] = []
    attackers = [threading.Thread(target=lambda: cut_off.append(send_big_head(api.url))) for _ in range(8)]
    attackers += [threading.Thread(target=drip, args=(api.url, kind)) for kind in ("head", "body") for _ in range(8)]
    peak_memory = memory_before
    with health_times(api.url) as pushed, ExitStack() as silent:
        for attacker in attackers:
            attacker.start()
        for _ in range(int(LIMITS["HTTP_MAX_CONNECTIONS"])):  # up to the limit and past it
            silent.enter_context(socket.create_connection(address(api.url), timeout=5))
        while any(attacker.is_alive() for attacker in attackers):
            peak_memory = max(peak_memory, api_process.memory_info().rss)
            time.sleep(0.02)
    baseline, during = statistics.median(alone), statistics.median(pushed)
    assert len(pushed) >= 20
    assert during < 5 * baseline + 20, (baseline, during)  # was seconds before the limits
    assert max(pushed) < 1000
    assert cut_off == [True] * 8  # each 5 MB head was cut off at the limit ...
    assert (peak_memory - memory_before) / 2**20 < 30  # ... not buffered


def send_big_head(url: str) -> bool:
    """A 5 MB header that never ends, sent as fast as the server takes it; True if the server cut it off."""
    with socket.create_connection(address(url), timeout=10) as sock:
        try:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ")
            sock.sendall(b"a" * 5 * 2**20)
            sock.settimeout(5)
            return sock.recv(4096) is not None  # an answer (431, or 503 past the connection limit), or the end
        except OSError as exc:
            return not isinstance(exc, TimeoutError)  # reset: answered and closed while we were still sending


def drip(url: str, kind: str) -> None:
    """A head, or a body after its head, sent a byte every 0.2 s until the server gives up on it."""
    with socket.create_connection(address(url), timeout=10) as sock:
        if kind == "body":
            sock.sendall(
                b"POST /v1/tickets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            )
        send_slowly(sock, b"X" * 100, every_s=0.2, for_s=TIMEOUT_S + 3)


# Starts the API with the soft open-files limit at 1,024, the usual default of a Linux login.
WITH_1024_OPEN_FILES = (
    "import os, resource, sys; hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]; "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard)); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def test_the_default_limit_serves_2048_connections_even_from_1024_open_files(database_url, tmp_path):
    """The bench's 1,024 users and their probes fit: the API raises its own open-files limit to hold them."""
    resource = pytest.importorskip("resource")
    limit = 2048
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2 * limit + 512:
        pytest.skip(f"the hard open-files limit ({hard}) is too low for this test")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2 * limit + 512), hard))  # this test holds 2,049 sockets
    port = processes.free_port()
    argv = [
        sys.executable,
        "-c",
        WITH_1024_OPEN_FILES,
        "-m",
        "uvicorn",
        "ticket_api.main:app",
        "--port",
        str(port),
        "--timeout-keep-alive",
        "60",
    ]
    env = {"DATABASE_URL": database_url, "HTTP_HEADER_TIMEOUT_S": "60", "LOG_LEVEL": "WARNING"}
    try:
        with processes.Service("api", argv, port, env=env, log_dir=tmp_path) as api, ExitStack() as held:
            assert open_files_soft_limit(api.process.pid) >= 2 * limit
            with httpx.Client(base_url=api.url, timeout=10) as prober:  # connection number 1
                prober.get("/health")
                sockets = [
                    held.enter_context(socket.create_connection(address(api.url), timeout=10)) for _ in range(limit - 1)
                ]
                assert all(ask_health(sock) == 200 for sock in sockets)
                refused = httpx.get(f"{api.url}/health", timeout=10)
                assert (refused.status_code, refused.json()["error"]) == (503, "too_many_connections")
                started = time.perf_counter()
                assert prober.get("/health").status_code == 200
                assert time.perf_counter() - started < 0.5
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def open_files_soft_limit(pid: int) -> int:
    """The soft RLIMIT_NOFILE of another process."""
    return psutil.Process(pid).rlimit(psutil.RLIMIT_NOFILE)[0]


def test_the_limits_apply_to_fastapi_dev_and_fastapi_run_too(database_url, tmp_path):
    for command in (["dev"], ["run", "--host", "127.0.0.1"]):
        port = processes.free_port()
        argv = [sys.executable, "-m", "fastapi", *command, "--port", str(port)]
        with processes.Service(
            "api", argv, port, env={"DATABASE_URL": database_url}, log_dir=tmp_path / command[0]
        ) as api:
            status, body = answer(big_head_answer(api.url))
            assert (status, body["error"]) == (431, "headers_too_large"), command


def big_head_answer(url: str) -> bytes:
    """The raw answer to a request whose head is 20 KB."""
    with socket.create_connection(address(url), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n")
        return read_all(sock)
