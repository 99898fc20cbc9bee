"""Security defaults: loopback only, no secret in logs or answers (bound SQL and the rest: test_untrusted_input.py)."""

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import psutil
import pytest
import typer.main
import uvicorn
from fastapi_cli.cli import app as fastapi_cli
from psycopg.conninfo import make_conninfo

from scripts.toolkit import cli, processes, services
from simulator.settings import Settings as SimulatorSettings
from tests.lab.reliability.reliability_testing import marked_ticket, post_all
from tests.lab.tools.commands import run_module
from ticket_api.config import load_settings
from ticket_api.instruments.embedded import embedded_dsn, stop_embedded

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
    simulator = services.Service(
        "simulator", [sys.executable, "-m", "simulator", "--port", str(sim_port)], sim_port, log_dir=tmp_path
    )
    api = services.Service(
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
