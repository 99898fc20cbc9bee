"""`python -m scripts.check` and a student's folder, in seconds: the copy step's files, the settings and where they
are set, the suite's count and failures, the command as a student types it, and what it refuses."""

import json
import os
import subprocess
import sys

import pytest

from scripts.toolkit.check.student_project import (
    COPIED,
    EDITED,
    MISSING,
    NOT_COPIED,
    SNAPSHOTS,
    default_lesson,
    file_states,
    settings_given,
)
from scripts.toolkit.cli import PROJECT_ROOT
from scripts.toolkit.lessons.spec import load_lessons
from scripts.toolkit.lessons.suites import run_suite

_, LESSONS = load_lessons()


def test_the_copy_step_tells_copied_missing_not_copied_and_edited_files_apart_whatever_the_line_endings(tmp_path):
    project = tmp_path / "project"
    for name in LESSONS[0].copy:
        target = project / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name != "scripts/stall.py":
            target.write_bytes((SNAPSHOTS / "end-of-m02" / name).read_bytes().replace(b"\n", b"\r\n"))
    (project / "README.md").write_bytes((SNAPSHOTS / "end-of-m01" / "README.md").read_bytes())
    (project / "tests" / "fakes.py").write_text("# mine\n")
    states = file_states(project, LESSONS, LESSONS[0].id)
    assert states["ticket_api/intake.py"] == COPIED  # CRLF, as git on Windows may write it
    assert (states["scripts/stall.py"], states["README.md"], states["tests/fakes.py"]) == (MISSING, NOT_COPIED, EDITED)


def test_the_default_lesson_is_the_latest_whose_copy_step_the_project_shows():
    assert default_lesson(SNAPSHOTS / "end-of-m01", LESSONS).id == "m02-io-versus-cpu"  # the one to do next
    assert default_lesson(SNAPSHOTS / "end-of-m02", LESSONS).id == "m02-dependency-limits"


def test_a_setting_is_found_where_the_api_reads_it_the_terminal_before_the_env_file(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("# mine\nLOG_LEVEL=DEBUG\nexport INTAKE_MODE=blocking\nNOT_A_SETTING=1\n")
    assert settings_given(tmp_path) == {
        "LOG_LEVEL": ("DEBUG", ".env line 2"),
        "INTAKE_MODE": ("blocking", ".env line 3"),
    }
    monkeypatch.setenv("intake_mode", "thread")  # names are not case-sensitive, as pydantic-settings reads them
    assert settings_given(tmp_path)["INTAKE_MODE"] == ("thread", "your terminal")


def test_a_suites_count_and_the_first_line_of_each_failure_are_read_from_pytest(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "def test_ok():\n    pass\n\n\ndef test_four_at_once():\n    assert 4 * 2.2 < 3, 'took 8.8 s'\n"
    )
    suite = run_suite(tmp_path, timeout_s=60)
    assert suite.counts == {"failed": 1, "passed": 1} and not suite.passed_exactly(2)
    assert suite.failures == ["tests/test_x.py::test_four_at_once - AssertionError: took 8.8 s"]
    assert not list(tmp_path.rglob("__pycache__")) and not (tmp_path / ".pytest_cache").exists()


def test_run_as_a_file_from_the_students_folder_it_finds_the_lab_and_lists_the_checks(tmp_path):
    project = tmp_path / "project"
    (project / "ticket_api").mkdir(parents=True)
    result = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "scripts" / "check.py"), "--list", "--lesson", "m02-io-versus-cpu"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()][:4] == ["copy", "tests", "api", "default-mode"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["."], "this is the lab's own folder"),
        (["/"], "has no ticket_api/ folder"),
        (["snapshots/end-of-m02", "--only", "nope"], "no check nope in m02-dependency-limits"),
    ],
)
def test_a_wrong_folder_or_check_is_one_line_and_exit_code_2(argv, message):
    result = subprocess.run(
        [sys.executable, "-m", "scripts.check", *argv], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_a_project_without_postgresql_could_not_run_and_gets_no_data_folder(tmp_path):
    project = tmp_path / "project"
    (project / "ticket_api").mkdir(parents=True)
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.check",
            str(project),
            "--lesson",
            "m02-io-versus-cpu",
            "--only",
            "tests",
            "--json",
        ],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    [tests] = json.loads(result.stdout)["checks"]
    assert tests["status"] == "error" and tests["reason"].endswith("run `python -m scripts.db init` in it first")
    assert not (project / ".lab").exists()
