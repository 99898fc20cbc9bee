"""`python -m scripts.busy`: the load runs while the command runs, on the PostgreSQL it is given, and always stops."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from scripts.toolkit.cli import PROJECT_ROOT
from scripts.toolkit.processes import OWN_GROUP
from scripts.toolkit.running.busy import Loads, describe_loads
from tests.lab.tools.commands import ctrl_c_as_from_a_terminal, run_module

TEXT = {"capture_output": True, "text": True, "timeout": 120}

# The command run under load: it writes down the loads beside it (its parent's other children) and what PostgreSQL
# runs for pgbench into the file argv[1], then exits with the code argv[2], or waits for a Ctrl+C ("wait").
WHAT_RUNS = """
import json, os, sys, time, psutil, psycopg
loads = [child for child in psutil.Process(os.getppid()).children() if child.pid != os.getpid()]
with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
    pgbench = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgbench'").fetchone()[0]
with open(sys.argv[1], "w") as seen:
    json.dump({"loads": {p.pid: " ".join(p.cmdline()) for p in loads}, "pgbench_sessions": pgbench}, seen)
if sys.argv[2] == "wait":
    time.sleep(60)
sys.exit(int(sys.argv[2]))
"""


def busy_argv(seen: Path, exit_code: str, cpu: int = 1, db: int = 2) -> list[str]:
    """`python -m scripts.busy --cpu CPU --db DB -- python -c WHAT_RUNS SEEN EXIT_CODE`."""
    command = [sys.executable, "-c", WHAT_RUNS, str(seen), exit_code]
    return [sys.executable, "-m", "scripts.busy", "--cpu", str(cpu), "--db", str(db), "--", *command]


def still_running(seen: dict) -> list[int]:
    """The loads the command saw that still run."""
    return [int(pid) for pid in seen["loads"] if psutil.pid_exists(int(pid))]


def test_the_command_runs_beside_the_cpu_and_database_loads_which_stop_with_it(database_url, tmp_path):
    argv = busy_argv(tmp_path / "seen.json", "0")
    result = subprocess.run(argv, cwd=PROJECT_ROOT, env={**os.environ, "DATABASE_URL": database_url}, **TEXT)
    assert result.returncode == 0, result.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    commands = list(seen["loads"].values())
    assert sum("while True: pass" in command for command in commands) == 1
    assert sum("pgbench" in command for command in commands) == 1
    assert seen["pgbench_sessions"] == 2  # two clients, each on its own connection to the command's server
    assert "PostgreSQL answered" in result.stderr
    assert still_running(seen) == []


def test_a_failing_command_gives_its_exit_code_and_the_load_still_stops(database_url, tmp_path):
    argv = busy_argv(tmp_path / "seen.json", "3", cpu=2, db=1)
    result = subprocess.run(argv, cwd=PROJECT_ROOT, env={**os.environ, "DATABASE_URL": database_url}, **TEXT)
    assert result.returncode == 3
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert len(seen["loads"]) == 3 and seen["pgbench_sessions"] == 1
    assert still_running(seen) == []


def test_ctrl_c_stops_the_command_and_the_load(database_url, tmp_path):
    argv, env = busy_argv(tmp_path / "seen.json", "wait", db=1), {**os.environ, "DATABASE_URL": database_url}
    # In a group of its own, as a terminal's foreground job is: Ctrl+C reaches every process of the group.
    with ctrl_c_as_from_a_terminal():
        busy = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, stderr=subprocess.DEVNULL, **OWN_GROUP)
    deadline = time.monotonic() + 60
    while not (tmp_path / "seen.json").exists() or not (tmp_path / "seen.json").read_text():
        assert busy.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    seen = json.loads((tmp_path / "seen.json").read_text())
    os.killpg(busy.pid, signal.SIGINT)
    assert busy.wait(30) == 130
    assert still_running(seen) == []


def test_a_database_load_that_cannot_start_is_one_line_and_exit_2(tmp_path):
    nowhere = f"host={tmp_path} port=5 dbname=postgres user=postgres"  # no server listens in an empty folder
    argv = ["--cpu", "0", "--db", "1", "--", sys.executable, "-c", "print('ran')"]
    result = run_module("scripts.busy", *argv, env={"DATABASE_URL": nowhere})
    assert result.returncode == 2
    assert "ran" not in result.stdout
    assert result.stderr.strip().splitlines()[-1].startswith("error: the database load did not start (pgbench")


def test_the_command_is_required():
    result = run_module("scripts.busy", "--cpu", "0", "--db", "0")
    assert result.returncode == 2 and "give the command to run after --" in result.stderr


def test_pgbenchs_progress_lines_count_the_queries_and_weigh_their_mean(tmp_path):
    log = tmp_path / "pgbench.log"
    log.write_text(
        "pgbench (18.6)\n"
        "progress: 1.0 s, 6.0 tps, lat 284.135 ms stddev 3.707, 0 failed\n"
        "progress: 2.0 s, 4.0 tps, lat 495.529 ms stddev 56.436, 0 failed\n"
    )
    count, mean_ms = Loads(database_log=log).database_queries()
    assert count == 10 and mean_ms == pytest.approx((6 * 284.135 + 4 * 495.529) / 10)
    assert Loads(database_log=tmp_path / "none.log").database_queries() == (0, None)


def test_the_loads_are_said_in_words():
    assert describe_loads(1, 2) == "1 CPU-bound process and 2 database loads (pgbench, a long query each)"
    assert describe_loads(2, 0) == "2 CPU-bound processes"
    assert describe_loads(0, 0) == "no load"
