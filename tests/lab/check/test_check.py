"""`python -m scripts.check` on real projects: end-of-m02 keeps every promise, end-of-m01 is told what to copy, and
each one-mistake project of chaffs.toml fails the checks its golden file says, with the hints it says.

Each runs the checker as a student does, in a child process, against a live stack of its own (the test run's
PostgreSQL server, a simulator and the project's API on free ports); a chaff's test runs only the checks its
golden file names, and what they need.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.toolkit.cli import PROJECT_ROOT
from tests.lab.check.chaffs import GOLDEN, SNAPSHOTS, check, load_chaffs, make_chaff, verdicts
from ticket_api.instruments.connections import connect

CHECK_PY = PROJECT_ROOT / "scripts" / "check.py"
CHAFFS = {chaff["name"]: chaff for chaff in load_chaffs()}


def copy_of(snapshot: str, into: Path) -> Path:
    """A student's project: a copy of the snapshot, without the caches a run of its own suite may have left."""
    return Path(shutil.copytree(SNAPSHOTS / snapshot, into, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")))


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under the folder and a hash of its bytes."""
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def check_databases(database_url: str) -> set[str]:
    """The checkers' databases on the server (a killed run of any earlier checker may have left its own)."""
    with connect(database_url) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'lab_check_%'").fetchall()
    return {row[0] for row in rows}


@pytest.mark.timing
def test_end_of_m02_keeps_every_promise_and_its_folder_is_left_as_it_was(tmp_path, database_url):
    project = copy_of("end-of-m02", tmp_path / "project")
    before, databases_before = fingerprint(project), check_databases(database_url)
    result = subprocess.run(  # as a student runs it: in their folder, the lab's script by its path
        [sys.executable, str(CHECK_PY), "--lesson", "m02-io-versus-cpu", "--json"],
        cwd=project,
        env={**os.environ, "DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(result.stdout)
    assert {item["name"]: item["status"] for item in report["checks"]} == dict.fromkeys(
        [
            "copy",
            "tests",
            "api",
            "default-mode",
            "blocking-stall",
            "async-stall",
            "thread-stall",
            "async-connections",
            "thread-connections",
            "request-log",
        ],
        "passed",
    ), result.stdout + result.stderr[-3000:]
    assert result.returncode == 0
    blocking = next(item for item in report["checks"] if item["name"] == "blocking-stall")
    lines = (project / "ticket_api" / "intake.py").read_text().splitlines()
    mistake = next(n for n, line in enumerate(lines, 1) if "work = do_ai_work(" in line)
    assert f"ticket_api/intake.py line {mistake} (create_ticket)" in blocking["info"][0]  # the lesson's mistake
    assert fingerprint(project) == before  # no bytecode, no cache, no data: nothing written in the student's folder
    assert check_databases(database_url) == databases_before  # its own database dropped


def test_end_of_m01_fails_the_copy_step_and_the_test_count_and_names_the_files_to_copy(tmp_path, database_url):
    project = copy_of("end-of-m01", tmp_path / "project")
    code, report = check(project, [], env={"DATABASE_URL": database_url})
    checks = {item["name"]: item for item in report["checks"]}
    assert code == 1
    assert (checks["copy"]["status"], checks["copy"]["hint_id"]) == ("failed", "copy-step")
    for name in ("ticket_api/intake.py", "tests/test_concurrency.py", "scripts/stall.py", "README.md"):
        assert name in checks["copy"]["hint"]
    assert 'cp "$S/$f" "$f"' in checks["copy"]["hint"] and "Copy-Item" in checks["copy"]["hint"]
    assert (checks["tests"]["status"], checks["tests"]["hint_id"]) == ("failed", "tests-missing")
    assert checks["tests"]["expected"] == "137 passed" and checks["tests"]["measured"].startswith("128 passed")
    assert "missing: tests/test_concurrency.py (9 tests)" in checks["tests"]["reason"]
    others = {name: item["status"] for name, item in checks.items() if name not in ("copy", "tests")}
    assert set(others.values()) == {"skipped"} and len(others) == 8
    assert {item["reason"] for item in checks.values() if item["status"] == "skipped"} == {
        "could not check, because copy failed"
    }


@pytest.mark.timing
def test_dependency_limits_burst_checks_pass_on_end_of_m02(tmp_path, database_url):
    project = copy_of("end-of-m02", tmp_path / "project")
    code, report = check(project, ["burst-thread", "burst-async"], {"DATABASE_URL": database_url}, lesson=None)
    assert report["lesson"] == "m02-dependency-limits"  # the latest lesson whose copy step the project shows
    assert {item["name"]: item["status"] for item in report["checks"]} == dict.fromkeys(
        ["copy", "api", "thread-stall", "async-stall", "burst-thread", "burst-async"], "passed"
    ), json.dumps(report, indent=2)  # each burst needs its mode's stall
    assert code == 0


@pytest.mark.timing
@pytest.mark.parametrize("name", CHAFFS)
def test_a_one_mistake_project_fails_the_check_it_should_with_the_hint_it_should(name, tmp_path, database_url):
    chaff = CHAFFS[name]
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    project = make_chaff(chaff, tmp_path / name)
    code, report = check(project, golden["only"], env={"DATABASE_URL": database_url})
    assert verdicts(report) == golden["checks"], json.dumps(report, indent=2)
    assert code == golden["exit"]
    if "held_at" in chaff:  # where the event loop was held: the mistake's own line, found from outside
        where = chaff["held_at"]
        lines = (project / where["file"]).read_text().splitlines()
        start = next(n for n, line in enumerate(lines) if f"def {where['function']}(" in line)
        number = next(n for n, line in enumerate(lines[start:], start + 1) if where["code"] in line)
        failing = next(item for item in report["checks"] if item["status"] == "failed")
        assert f"in {where['file']} line {number} ({where['function']})" in failing["reason"], failing["reason"]
