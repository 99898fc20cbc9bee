"""Untrusted input stays data: SQL only with bound parameters, a simulator admin for loopback or its token, no
exception text in an answer, and a request id checked before it is echoed or logged."""

import ast
import asyncio
import logging
import re
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from scripts.toolkit.running.stack import MODES
from simulator.app import build_app
from simulator.replay import load_recording
from simulator.settings import BUNDLED_RECORDING
from simulator.settings import Settings as SimulatorSettings
from tests.fakes import FakeProvider
from tests.lab.reliability.reliability_testing import assert_idle, marked_ticket
from tests.servers import serve
from ticket_api.config import load_settings
from ticket_api.main import create_app

TICKET_API = Path(__file__).resolve().parents[3] / "ticket_api"
SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


ALLOWED_IN_FSTRINGS = {"TICKET_COLUMNS", "IDEMPOTENCY_KEY_TTL"}
# SQL that is not a literal, where it comes from: the counting cursor passes queries on, the schema file.
ALLOWED_DYNAMIC = {("querycount.py", "query"), ("database.py", "SCHEMA.read_text()")}
SQL_CALLS = {"execute", "executemany", "copy"}


def unsafe_sql(source: str, filename: str) -> list[str]:
    """Calls that run SQL not written as a literal (or as an f-string of allowed constants)."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_CALLS
            and node.args
        ):
            continue
        query = node.args[0]
        if isinstance(query, ast.Constant) and isinstance(query.value, str):
            continue
        if isinstance(query, ast.JoinedStr):
            inserted = {ast.unparse(part.value) for part in query.values if isinstance(part, ast.FormattedValue)}
            if inserted <= ALLOWED_IN_FSTRINGS:
                continue
        if (filename, ast.unparse(query)) not in ALLOWED_DYNAMIC:
            problems.append(f"{filename}:{node.lineno}: {ast.unparse(query)[:80]}")
    return problems


def test_sql_is_only_run_with_bound_parameters():
    problems = [
        problem for path in sorted(TICKET_API.glob("*.py")) for problem in unsafe_sql(path.read_text(), path.name)
    ]
    assert problems == []
    constants = {
        node.targets[0].id: node.value
        for node in ast.parse((TICKET_API / "repository.py").read_text()).body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    assert all(isinstance(constants[name], ast.Constant) for name in ALLOWED_IN_FSTRINGS)


@pytest.mark.parametrize(
    "line",
    [
        'conn.execute(f"SELECT * FROM tickets WHERE id = {ticket_id}")',
        "conn.execute(\"SELECT * FROM tickets WHERE subject = '%s'\" % subject)",
        'conn.execute("SELECT * FROM tickets WHERE id = {}".format(ticket_id))',
        'conn.execute("SELECT * FROM tickets WHERE id = " + str(ticket_id))',
        'query = f"DELETE FROM tickets WHERE id = {ticket_id}"\nconn.cursor().execute(query)',
    ],
)
def test_the_sql_check_catches_queries_built_from_data(line):
    assert unsafe_sql(line, "example.py")


def call_simulator(
    app, method: str, path: str, client_host: str, token: str | None = None, body: bytes = b""
) -> tuple[int, bytes]:
    """One request straight into the simulator's ASGI app, as if from `client_host`: (status, body)."""
    headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
    scope = {"type": "http", "method": method, "path": path, "headers": headers, "client": (client_host, 50000)}
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/admin/quota", b""),
        ("PUT", "/admin/quota", b'{"requests_per_minute": 0}'),
        ("PUT", "/admin/quota", b"not json"),
        ("POST", "/admin/quota/reset", b""),
    ],
)
def test_the_simulators_admin_answers_only_loopback_or_the_token(method, path, body):
    app = build_app(SimulatorSettings(admin_token="t0ken", quota=7), load_recording(BUNDLED_RECORDING))
    remote = "203.0.113.9"  # a documentation address, only written into the request: nothing is sent anywhere
    for token in (None, "wrong", "T0KEN", "t0ke"):
        status, answer = call_simulator(app, method, path, remote, token, body)
        assert status == 403 and b"admin_forbidden" in answer  # refused before the body is even read
    assert app.sim.quota.requests_per_minute == 7
    expected = 400 if body == b"not json" else 200
    assert call_simulator(app, method, path, remote, "t0ken", body)[0] == expected
    assert call_simulator(app, method, path, "127.0.0.1", None, body)[0] == expected
    without_token = build_app(SimulatorSettings(), load_recording(BUNDLED_RECORDING))
    assert call_simulator(without_token, method, path, remote, "anything", body)[0] == 403


@pytest.mark.parametrize("mode", MODES)
def test_an_unexpected_error_is_500_without_the_exception_text(make_settings, customer_id, mode):
    provider = FakeProvider(0.01, error=RuntimeError("boom at /srv/secret/path.py, password=hunter2"))
    with serve(create_app(make_settings(intake_mode=mode), provider)) as url:
        answer = httpx.post(f"{url}/v1/tickets", json=marked_ticket(customer_id), timeout=30)
        assert answer.status_code == 500
        assert answer.json() == {
            "error": "internal_error",
            "detail": "an unexpected error; the API log has the details",
        }
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
        assert_idle(url)


@pytest.fixture(scope="module")
def logged_api(database_url: str):
    """The API on a real server in a thread, logging its request lines (INFO)."""
    settings = load_settings(_env_file=None, database_url=database_url, db_pool_min_size=1, log_level="INFO")
    with serve(create_app(settings, FakeProvider(0.0))) as url:
        yield url


def raw_request(url: str, head: bytes) -> bytes:
    """Send raw request bytes (what no well-behaved client would send); the answer's head."""
    address = urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(head)
        return sock.recv(4096).split(b"\r\n\r\n")[0]


@pytest.mark.parametrize(
    "sent",
    [b"x" * 1000, b"abc\rdef", b"abc def", b"caf\xc3\xa9", b"<script>", b""],
    ids=["1000-chars", "carriage-return", "space", "non-ascii", "markup", "empty"],
)
def test_an_unsafe_request_id_is_replaced_before_it_is_echoed_or_logged(logged_api, caplog, sent):
    caplog.set_level(logging.INFO, logger="ticket_api")
    head = raw_request(logged_api, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Request-ID: " + sent + b"\r\n\r\n")
    status_line, *header_lines = head.split(b"\r\n")
    if status_line.startswith(b"HTTP/1.1 400"):  # the HTTP parser refused it before the app saw it:
        assert not [line for line in header_lines if line.lower().startswith(b"x-request-id:")]  # nothing echoed,
        assert not [r for r in caplog.records if "GET /health" in r.getMessage()]  # nothing logged
        return
    assert status_line.startswith(b"HTTP/1.1 200")
    echoed = [line.split(b":", 1)[1].strip() for line in header_lines if line.lower().startswith(b"x-request-id:")]
    assert len(echoed) == 1 and echoed[0] != sent and SAFE_REQUEST_ID.fullmatch(echoed[0].decode())
    assert request_line(caplog).endswith(f"id={echoed[0].decode()}")


def test_a_safe_request_id_is_echoed_and_logged(logged_api, caplog):
    caplog.set_level(logging.INFO, logger="ticket_api")
    answer = httpx.get(f"{logged_api}/health", headers={"X-Request-ID": "trace-42.a_b"}, timeout=10)
    assert answer.headers["X-Request-ID"] == "trace-42.a_b"
    assert request_line(caplog).endswith("id=trace-42.a_b")


def request_line(caplog) -> str:
    """The last `GET /health` line of the request log, waited for: it is logged once the answer is sent, so it may
    come after the client has the answer."""
    deadline = time.monotonic() + 5
    while not (logged := [r.getMessage() for r in caplog.records if "GET /health" in r.getMessage()]):
        assert time.monotonic() < deadline, "no request line logged"
        time.sleep(0.01)
    return logged[-1]
