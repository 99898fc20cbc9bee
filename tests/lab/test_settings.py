"""Settings validated for what they mean: finite bounded numbers, URLs that parse, one line per mistake, no secret."""

import os
import subprocess
import sys
import time

import httpx
import pytest

from scripts.toolkit import cli, processes
from scripts.toolkit.running import apis
from tests.lab.tools.commands import run_module
from tests.test_config import refusal
from ticket_api.config import load_settings
from ticket_api.instruments.startup import hide_password

PASSWORD = "PGSECRETPW"
BAD = [  # variable, value, a word of the one-line answer
    ("PROVIDER_TIMEOUT_S", "inf", "3600"),
    ("PROVIDER_TIMEOUT_S", "1e400", "3600"),
    ("PROVIDER_TIMEOUT_S", "nan", "3600"),
    ("DB_POOL_TIMEOUT_S", "inf", "3600"),
    ("DB_POOL_TIMEOUT_S", "0", "greater than 0"),
    ("PROVIDER_TIMEOUT_S", "-inf", "greater than 0"),
    ("PROVIDER_MAX_CONNECTIONS", "0", "greater than or equal to 1"),
    ("PROVIDER_MAX_CONNECTIONS", "99999999999", "less than or equal to"),
    ("THREAD_LIMIT", "1e9", "valid integer"),
    ("PROVIDER_API_KEY", "sk-café", "printable ASCII"),
    ("PROVIDER_API_KEY", "sk lab", "printable ASCII"),
    ("PROVIDER_API_KEY", "", "printable ASCII"),
    ("PROVIDER_URL", "http://[::1/v1", "not a URL"),
    ("PROVIDER_URL", "http://", "a host"),
    ("PROVIDER_URL", "http:///v1", "a host"),
    ("PROVIDER_URL", "http://127.0.0.1:99999/v1", "out of range"),
    ("PROVIDER_URL", "http://127.0.0.1:0/v1", "1 to 65535"),
    ("PROVIDER_URL", "http://127.0.0.1:8100", "/v1"),
    ("PROVIDER_URL", "http://127.0.0.1:8100/v2", "/v1"),
    ("PROVIDER_URL", f"http://user:{PASSWORD}@127.0.0.1:8100/v1", "PROVIDER_API_KEY"),
    ("PROVIDER_URL", "http://127.0.0.1:8100/v1?key=x", "query"),
    ("DATABASE_URL", f"postgresql+psycopg://lab:{PASSWORD}@127.0.0.1:5432/lab", "postgresql://"),
    ("DATABASE_URL", f"postgresql://lab:{PASSWORD}@127.0.0.1:99999/lab", "1 to 65535"),
    ("DATABASE_URL", f"postgresql://lab:{PASSWORD}@[::1/lab", "not a PostgreSQL URL"),
    ("DATABASE_URL", f"postgresql://lab:{PASSWORD}%zz@127.0.0.1/lab", "not a PostgreSQL URL"),
    ("DATABASE_URL", f"host=127.0.0.1 user=lab password={PASSWORD} port=notaport", "1 to 65535"),
    ("DATABASE_URL", f"host=127.0.0.1 user=lab password='{PASSWORD}", "not a PostgreSQL URL"),
    ("DATABASE_URL", f"postgresql:///lab?host=/tmp&password={PASSWORD}&port=0", "1 to 65535"),
]


pytestmark = pytest.mark.usefixtures("clean_environment")


@pytest.mark.parametrize(("variable", "value", "said"), BAD)
def test_a_bad_value_is_one_line_naming_the_variable_without_any_secret(monkeypatch, variable, value, said):
    message = refusal(monkeypatch, variable, value)  # the student suite's check (tests/test_config.py)
    assert said in message
    assert PASSWORD not in message and "café" not in message


@pytest.mark.parametrize("value", ["", "   ", "\t\n"])
def test_a_blank_database_url_means_the_embedded_server(monkeypatch, value):
    monkeypatch.setenv("DATABASE_URL", value)
    assert load_settings().database_url is None


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("PROVIDER_URL", "https://api.example.com/v1/"),
        ("PROVIDER_URL", "http://[::1]:8100/v1"),
        ("PROVIDER_URL", "http://localhost/openai/v1"),
        ("DATABASE_URL", "postgresql://lab@db1:5432,db2:5433/lab"),
        ("DATABASE_URL", "host=/tmp dbname=lab"),
        ("PROVIDER_TIMEOUT_S", "0.25"),
        ("PROVIDER_MAX_CONNECTIONS", "100000"),
    ],
)
def test_good_values_pass(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    load_settings()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"postgresql://lab:{PASSWORD}@db/lab", "postgresql://lab:***@db/lab"),
        (f"postgresql://lab:p@ss{PASSWORD}@db/lab", "postgresql://lab:***@db/lab"),
        (f"postgres://:{PASSWORD}@db", "postgres://:***@db"),
        (f"user=lab password={PASSWORD} host=db", "user=lab password=*** host=db"),
        (f"user=lab password = '{PASSWORD} with spaces\\' quoted' host=db", "user=lab password = *** host=db"),
        (f"user=lab password='{PASSWORD}", "user=lab password=***"),
        (f"postgresql:///lab?password={PASSWORD}&host=/tmp", "postgresql:///lab?password=***&host=/tmp"),
        ("postgresql://lab@db:5432/lab", "postgresql://lab@db:5432/lab"),
    ],
)
def test_hide_password_masks_every_form(text, shown):
    assert hide_password(text) == shown


def wait_for_exit(argv: list[str], env: dict[str, str], timeout_s: float = 60) -> tuple[int, str]:
    """Run a command until it exits; its exit code and its output (stdout and stderr)."""
    result = subprocess.run(
        argv, cwd=cli.PROJECT_ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout_s
    )
    return result.returncode, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("PROVIDER_TIMEOUT_S", "inf"),
        ("DB_POOL_TIMEOUT_S", "inf"),
        ("PROVIDER_API_KEY", "sk-café"),
        ("PROVIDER_URL", "http://[::1/v1"),
        ("DATABASE_URL", f"postgresql+psycopg://lab:{PASSWORD}@127.0.0.1:5432/lab"),
    ],
)
def test_uvicorn_and_scripts_db_stop_on_a_bad_value_with_one_line_and_no_traceback(variable, value):
    port = str(processes.free_port())
    code, output = wait_for_exit(
        [sys.executable, "-m", "uvicorn", "ticket_api.main:app", "--port", port], {variable: value}
    )
    assert code == 3
    lines = [line for line in output.splitlines() if variable in line]
    assert len(lines) == 1 and lines[0].startswith(f"ERROR:    invalid setting {variable}=")
    assert "Traceback" not in output and PASSWORD not in output and "café" not in output
    db = run_module("scripts.db", "status", env={variable: value})
    assert db.returncode == 2
    assert db.stderr.startswith(f"error: invalid setting {variable}=") and db.stderr.count("\n") == 1
    assert PASSWORD not in db.stderr + db.stdout


def test_fastapi_dev_stops_on_a_bad_value_with_one_line(tmp_path):
    port = processes.free_port()
    argv = [sys.executable, "-m", "fastapi", "dev", "--port", str(port)]
    log = tmp_path / "dev.log"
    with open(log, "wb") as output:
        process = processes.start_process(argv, env={**os.environ, "PROVIDER_TIMEOUT_S": "inf"}, stdout=output)
    try:
        deadline = time.monotonic() + 60
        while "Application startup failed" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        processes.stop_process(process, 10)  # fastapi dev's reloader waits for a change; the worker has exited
    text = log.read_text()
    assert "Traceback" not in text
    assert [line for line in text.splitlines() if "PROVIDER_TIMEOUT_S" in line] == [
        "ERROR:    invalid setting PROVIDER_TIMEOUT_S='inf': Input should be less than or equal to 3600"
    ]


def test_an_unreachable_provider_is_one_warning_and_the_api_starts_anyway(database_url, tmp_path):
    provider_url = f"http://127.0.0.1:{processes.free_port()}/v1"
    with apis.api(provider_url, env={"DATABASE_URL": database_url}, log_dir=tmp_path) as api:
        assert httpx.get(f"{api.url}/health").status_code == 200
    lines = [line for line in api.log_path.read_text().splitlines() if "AI provider" in line]
    assert len(lines) == 1 and lines[0].startswith("WARNING") and provider_url in lines[0]
