"""Security defaults: loopback only, no secret in logs or answers, bound SQL, a guarded admin, no tracebacks."""

import ast
import asyncio
import logging
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil
import pytest
import typer.main
import uvicorn
from fastapi_cli.cli import app as fastapi_cli
from psycopg.conninfo import make_conninfo

from scripts.toolkit import cli, processes
from simulator.app import build_app
from simulator.replay import load_recording
from simulator.settings import BUNDLED_RECORDING
from simulator.settings import Settings as SimulatorSettings
from tests.fakes import FakeProvider
from tests.lab.reliability.reliability_testing import MODES, assert_idle, marked_ticket, post_all
from tests.lab.tools.commands import run_module
from tests.servers import serve
from ticket_api.config import load_settings
from ticket_api.embedded import embedded_dsn, stop_embedded
from ticket_api.main import create_app

TICKET_API = Path(__file__).resolve().parents[3] / "ticket_api"
SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def listening_addresses(pid: int) -> set[str]:
    """The local addresses a process listens on."""
    return {conn.laddr.ip for conn in psutil.Process(pid).net_connections(kind="inet") if conn.status == "LISTEN"}


def test_every_server_of_the_lab_defaults_to_loopback():
    assert SimulatorSettings().host == "127.0.0.1"
    assert uvicorn.Config(app=None).host == "127.0.0.1"
    hosts = {
        name: [p.default for p in command.params if p.name == "host"]
        for name, command in typer.main.get_command(fastapi_cli).commands.items()
        if name in ("dev", "run")
    }
    assert hosts["dev"] == ["127.0.0.1"]  # the course's command
    assert hosts["run"] == ["0.0.0.0"]  # so the lab never tells anyone to use it without --host
    readmes = [p for p in TICKET_API.parent.rglob("README.md") if not {".venv", ".lab"} & set(p.parts)]
    lines = [line for readme in readmes for line in readme.read_text().splitlines() if "fastapi run" in line]
    assert lines and all("--host 127.0.0.1" in line for line in lines)
    assert "(default 127.0.0.1)" in run_module("simulator.record", "--help").stdout


def test_the_simulator_and_the_api_listen_on_loopback_when_not_told_otherwise(database_url, tmp_path):
    sim_port, api_port = processes.free_port(), processes.free_port()
    simulator = processes.Service(
        "simulator", [sys.executable, "-m", "simulator", "--port", str(sim_port)], sim_port, log_dir=tmp_path
    )
    api = processes.Service(
        "api",
        [sys.executable, "-m", "uvicorn", "ticket_api.main:app", "--port", str(api_port)],
        api_port,
        env={"DATABASE_URL": database_url},
        log_dir=tmp_path,
    )
    with simulator, api:
        assert listening_addresses(simulator.process.pid) == {"127.0.0.1"}
        assert listening_addresses(api.process.pid) == {"127.0.0.1"}


@pytest.fixture(scope="module")
def failing_simulator(start_simulator):
    """Errors, hangs and a quota of 4 chat calls a minute: calls that fail in every way the API reports."""
    return start_simulator("--error-rate", "0.3", "--hang-rate", "0.1", "--hang-s", "2", "--seed", "3", quota=4)


def test_the_provider_key_appears_in_no_log_line_and_no_answer(start_api, failing_simulator, customer_id):
    secret = f"sk-secret-{uuid.uuid4().hex}"
    env = {"PROVIDER_API_KEY": secret, "LOG_LEVEL": "DEBUG", "PROVIDER_TIMEOUT_S": "0.5"}
    answering = start_api(f"{failing_simulator.url}/v1", **env)
    down = start_api(f"http://127.0.0.1:{processes.free_port()}/v1", **env)
    answers = post_all(answering.url, [marked_ticket(customer_id) for _ in range(12)], concurrency=4)
    answers += post_all(down.url, [marked_ticket(customer_id) for _ in range(2)], concurrency=2)
    answers.append(httpx.get(f"{answering.url}/v1/tickets/{2**62}"))
    errors = {answer.json()["error"] for answer in answers if answer.status_code != 201}
    assert {"ai_busy", "ai_unavailable", "ticket_not_found"} <= errors  # the key was used, and refused, too
    for service in (answering, down):
        service.stop()
    logs = answering.log_path.read_text() + down.log_path.read_text()
    assert "HTTP Request: POST" in logs and "POST /v1/tickets" in logs  # the log had something to leak
    assert secret not in logs
    assert all(secret not in answer.text and secret not in str(answer.headers) for answer in answers)


def test_no_password_and_no_key_in_any_line_or_answer_of_a_faulty_run(
    start_api, start_simulator, failing_simulator, own_database
):
    """Bad DATABASE_URLs, the database lost while running, provider errors, hangs and quota: nothing shows a secret."""
    password, key = f"pw-{uuid.uuid4().hex}", f"sk-secret-{uuid.uuid4().hex}"
    seen: list[str] = []  # every line printed or logged, every answer
    for url in [
        f"postgresql+psycopg://lab:{password}@127.0.0.1:5432/lab",
        f"postgresql://lab:{password}@[::1/lab",
        f"postgresql://lab:{password}%zz@127.0.0.1/lab",
        f"host=127.0.0.1 user=lab password='{password}",
        f"postgresql://lab:{password}@127.0.0.1:{processes.free_port()}/lab",
        f"host=127.0.0.1 port={processes.free_port()} user=lab password={password}",
    ]:
        started = subprocess.run(
            [sys.executable, "-m", "uvicorn", "ticket_api.main:app", "--port", str(processes.free_port())],
            cwd=cli.PROJECT_ROOT,
            env={**os.environ, "DATABASE_URL": url},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert started.returncode == 3
        status = run_module("scripts.db", "status", env={"DATABASE_URL": url})
        assert status.returncode == 2
        seen += [started.stdout, started.stderr, status.stdout, status.stderr]
    with_password = [
        own_database.dsn.replace("postgres:@", f"postgres:{password}@", 1),  # the URL form
        make_conninfo(own_database.dsn, password=password),
    ]  # the key=value form
    env = {"PROVIDER_API_KEY": key, "LOG_LEVEL": "DEBUG", "PROVIDER_TIMEOUT_S": "0.5"}
    errors_and_hangs = start_simulator("--error-rate", "0.4", "--hang-rate", "0.3", "--hang-s", "2", "--seed", "5")
    apis = [
        start_api(f"{simulator.url}/v1", DATABASE_URL=dsn, **env)
        for simulator, dsn in zip((errors_and_hangs, failing_simulator), with_password, strict=False)
    ]
    answers = [answer for api in apis for answer in post_all(api.url, [marked_ticket(1) for _ in range(8)], 4)]
    assert {"ai_busy", "ai_unavailable", "ai_timeout"} <= {answer.json().get("error") for answer in answers}
    assert stop_embedded(own_database.pgdata)
    try:
        for api in apis:
            lost = post_all(api.url, [marked_ticket(1)], 1) + [httpx.get(f"{api.url}/v1/tickets/1", timeout=30)]
            assert [answer.json() for answer in lost] == [
                {"error": "db_unavailable", "detail": "the database is unavailable"}
            ] * 2
            answers += lost
    finally:
        embedded_dsn(own_database.pgdata)
    for api in apis:
        api.stop()
        log = api.log_path.read_text()
        assert "db_unavailable: " in log and "HTTP Request: POST" in log  # the causes went to the log
        seen.append(log)
    seen += [answer.text + str(answer.headers) for answer in answers]
    assert not [text for text in seen if password in text or key in text]


def test_settings_never_show_the_key():
    secret = f"sk-secret-{uuid.uuid4().hex}"
    settings = load_settings(_env_file=None, provider_api_key=secret)
    assert settings.provider_api_key.get_secret_value() == secret
    shown = [repr(settings), str(settings), settings.model_dump_json(), repr(settings.model_dump())]
    assert all(secret not in text for text in shown)


# Interpolations into SQL that are allowed: module constants of repository.py, never request data.
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
    if status_line.startswith(b"HTTP/1.1 400"):
        return  # the HTTP parser refused it before the app saw it: nothing echoed either
    assert status_line.startswith(b"HTTP/1.1 200")
    echoed = [line.split(b":", 1)[1].strip() for line in header_lines if line.lower().startswith(b"x-request-id:")]
    assert len(echoed) == 1 and echoed[0] != sent and SAFE_REQUEST_ID.fullmatch(echoed[0].decode())
    deadline = time.monotonic() + 5  # the line is logged once the answer is sent: it may come after the answer
    while not (logged := [r.getMessage() for r in caplog.records if "GET /health" in r.getMessage()]):
        assert time.monotonic() < deadline, "no request line logged"
        time.sleep(0.01)
    assert logged[-1].endswith(f"id={echoed[0].decode()}")


def test_a_safe_request_id_is_echoed_and_logged(logged_api, caplog):
    caplog.set_level(logging.INFO, logger="ticket_api")
    answer = httpx.get(f"{logged_api}/health", headers={"X-Request-ID": "trace-42.a_b"}, timeout=10)
    assert answer.headers["X-Request-ID"] == "trace-42.a_b"
    assert any(record.getMessage().endswith("id=trace-42.a_b") for record in caplog.records)
