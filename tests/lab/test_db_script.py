"""`python -m scripts.db`: init is idempotent, status hides the password, failures are one line."""

import subprocess
import sys

import pytest
from psycopg.conninfo import conninfo_to_dict

from scripts.toolkit.cli import CommandError
from scripts.toolkit.databases import init, status, temporary_database
from scripts.toolkit.processes import free_port


@pytest.fixture
def empty_database(database_url):
    """A database of its own, dropped after the test."""
    with temporary_database(database_url, f"{conninfo_to_dict(database_url)['dbname']}_init") as url:
        yield url


def run_db(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scripts.db", *args],
        capture_output=True,
        text=True,
        env={"PATH": "", **env},
        timeout=120,
    )


def test_init_loads_the_small_data_set_once(empty_database):
    assert init(empty_database, "small") == "loaded the small data set"
    assert init(empty_database, "small") == "the small data set is already loaded"
    lines = status(empty_database)
    assert "data set: small" in lines
    assert any(line.startswith("customers") and line.endswith("300 rows") for line in lines)
    assert any(line.startswith("tickets ") and line.endswith("3,000 rows") for line in lines)


def test_init_will_not_replace_a_data_set_without_reset(empty_database):
    init(empty_database, "small")
    with pytest.raises(CommandError, match="--reset"):
        init(empty_database, "large")


def test_status_of_an_empty_database_says_to_run_init(empty_database):
    assert "run `python -m scripts.db init`" in status(empty_database)[-1]


def test_help_describes_the_subcommands():
    result = run_db("--help")
    assert result.returncode == 0
    assert all(command in result.stdout for command in ("init", "status", "start", "stop"))


@pytest.mark.parametrize("command", ["start", "stop"])
def test_start_and_stop_leave_a_server_of_database_url_alone(command):
    result = run_db(command, DATABASE_URL="postgresql://lab@127.0.0.1:5432/lab")
    assert result.returncode == 2
    assert result.stderr == f"error: DATABASE_URL is set: that server is not the lab's to {command}\n"


def test_an_unreachable_server_is_one_line_and_exit_2():
    result = run_db("status", DATABASE_URL=f"postgresql://lab:s3cr3t-pw@127.0.0.1:{free_port()}/lab")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: cannot connect")
    assert "s3cr3t-pw" not in result.stderr
