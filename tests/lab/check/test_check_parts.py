"""The parts of `python -m scripts.check`, each on its own and in seconds: how checks run and depend on each other,
why an API did not start, and the checks' data (the sampler that finds where the event loop was held: in
test_loop_sampler.py)."""

import asyncio
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from fastapi import FastAPI

from scripts.snapshots import copy_tree
from scripts.toolkit.check import loop_sampler
from scripts.toolkit.check.checks import (
    ERROR,
    FAILED,
    PASSED,
    SKIPPED,
    Check,
    Result,
    failed,
    passed,
    run_checks,
    with_dependencies,
)
from scripts.toolkit.check.context import Context
from scripts.toolkit.check.lesson_checks import lesson_checks
from scripts.toolkit.check.report import exit_code, hints, render
from scripts.toolkit.check.student_api import ApiDidNotStart, startup_failure
from scripts.toolkit.check.student_project import SNAPSHOTS, InvalidSettings, read_settings, settings_refused
from scripts.toolkit.cli import PROJECT_ROOT
from scripts.toolkit.commands.options import Clock
from scripts.toolkit.lessons.spec import CommandTimedOut, expectation, load_lessons, run_command
from scripts.toolkit.lessons.suites import NO_TRACES
from scripts.toolkit.processes import free_port
from scripts.toolkit.running.apis import uvicorn_command
from tests.servers import serve

_, LESSONS = load_lessons()


def run(checks: list[Check]) -> dict[str, Result]:
    return {result.name: result for result in run_checks(checks, lambda name: f"rerun {name}", Clock())}


def test_a_check_after_a_failed_one_could_not_check_and_names_the_first_failure():
    results = run(
        [
            Check("copy", "files", lambda _: failed("9 files", "7 files", "copy-step")),
            Check("api", "starts", lambda _: passed(), ("copy",)),
            Check("stall", "stalls", lambda _: passed(), ("api",)),
        ]
    )
    assert [r.status for r in results.values()] == [FAILED, SKIPPED, SKIPPED]
    assert results["stall"].reason == "could not check, because copy failed"
    assert results["copy"].rerun == "rerun copy" and results["api"].rerun is None
    assert exit_code(list(results.values())) == 1


def test_a_timing_check_runs_twice_before_it_fails_and_a_second_pass_is_a_pass():
    attempts: list[int] = []

    def flaky(attempt: int) -> Result:
        attempts.append(attempt)
        return passed() if attempt == 2 else failed("< 20 ms", "31 ms", "loop-held")

    results = run(
        [
            Check("always", "fails", lambda _: failed("< 20 ms", "8.7 s", "loop-held"), timing=True),
            Check("once", "fails once", flaky, timing=True),
            Check("setting", "fails once, not timed", lambda _: failed("async", "blocking", "setting-in-env-file")),
        ]
    )
    assert (results["always"].status, results["always"].runs) == (FAILED, 2)
    assert (results["once"].status, attempts) == (PASSED, [1, 2])
    assert results["once"].info == ["it failed once, and passed when run again"]
    assert results["setting"].runs == 1
    tickets_failed = failed("status codes [201]", "status codes [201, 503]", "tickets-failed")
    tickets_failed.may_be_noise = False
    attempts.clear()
    results = run(
        [Check("statuses", "201 each", lambda attempt: attempts.append(attempt) or tickets_failed, timing=True)]
    )
    assert (results["statuses"].runs, attempts) == (1, [1])  # a ticket that failed is no timing noise: run once


def test_a_problem_of_the_checker_could_not_run_and_is_not_counted_against_the_student():
    def broken(attempt: int) -> Result:
        raise KeyError("figures")

    results = run([Check("a", "passes", lambda _: passed()), Check("b", "breaks", broken)])
    assert results["b"].status == ERROR
    assert results["b"].reason == "could not run: the checker failed (KeyError: 'figures')"
    assert results["b"].cause == "the checker failed (KeyError: 'figures')"  # a field: the report says it once
    header = {"project": "../larkfield", "lesson": "m02-io-versus-cpu", "lesson_title": "I/O", "seconds": 1}
    assert render([results["b"]], header).splitlines()[2:4] == [
        "could not run    b: breaks",
        "                 the checker failed (KeyError: 'figures')",
    ]
    assert exit_code(list(results.values())) == 2
    assert exit_code([results["a"]]) == 0


def test_the_text_says_expected_and_measured_the_hint_with_its_section_and_the_command_to_rerun():
    stall = failed("/health median < 20 ms", "/health median 412 ms", "loop-held", "held by `time.sleep(0.5)`")
    stall.name, stall.description, stall.runs = "async-stall", "async mode keeps /health fast", 2
    stall.rerun = "python ../nextia-learning-labs/C21/scripts/check.py --lesson m02-io-versus-cpu --only async-stall"
    skipped = Result("request-log", "the request log shows queries=7", SKIPPED, because="api")
    header = {"project": "../larkfield", "lesson": "m02-io-versus-cpu", "lesson_title": "I/O", "seconds": 19}
    lines = render([stall, skipped], header).splitlines()
    assert lines[2] == "FAILED           async-stall: async mode keeps /health fast"
    assert "measured /health median 412 ms (failed twice)" in lines[4]
    assert lines[6].strip().startswith("hint: A call that waits, with no await")
    assert any('"Common mistake: One normal call in an async def stalls every' in line for line in lines)
    assert f"                 rerun it alone: {stall.rerun}" in lines  # a command to copy, in one piece
    assert lines[-3:] == [
        "                 because api failed",
        "",
        "2 checks: 1 failed, 1 could not check (19 s)",
    ]


@pytest.mark.timing
def test_a_lesson_command_still_running_at_its_bound_is_stopped_and_said_timed_out():
    app = FastAPI()

    @app.get("/health")
    async def health() -> dict:
        await asyncio.sleep(4)  # an API whose answers come too late (and then let the server stop soon)
        return {}

    with serve(app) as url:
        started = time.monotonic()
        with pytest.raises(CommandTimedOut, match="did not finish within 2 s"):
            run_command({"run": "python -m scripts.stall"}, url, 1.0, PROJECT_ROOT, timeout_s=2)
        assert time.monotonic() - started < 10


def test_only_runs_a_check_and_what_it_depends_on_in_order():
    checks = [Check(name, name, lambda _: passed(), depends) for name, depends in [("copy", ()), ("tests", ())]]
    checks += [Check("api", "", lambda _: passed(), ("copy",)), Check("stall", "", lambda _: passed(), ("api",))]
    assert [check.name for check in with_dependencies(checks, ["stall"])] == ["copy", "api", "stall"]


# A project that cannot start, as files: what the checker says of it, and the exception it names.
BROKEN = {
    "syntax": (
        {"main.py": "from ticket_api import intake\napp = intake.app\n", "intake.py": "app = None\nmode = x)\n"},
        "SyntaxError in ticket_api/intake.py line 2: unmatched ')'",
        "SyntaxError",
    ),
    "import": (
        {"main.py": "from ticket_api.intake import app\n", "intake.py": "from ticket_api.ai import do_ai_work_async\n"},
        "ImportError in ticket_api/intake.py line 1: cannot import name 'do_ai_work_async' from 'ticket_api.ai' "
        "({p}/ticket_api/ai.py)",
        "ImportError",
    ),
    "lifespan": (
        {
            "main.py": "from contextlib import asynccontextmanager\nfrom fastapi import FastAPI\n\n\n"
            "@asynccontextmanager\nasync def lifespan(app):\n    raise ValueError('boom')\n    yield\n\n\n"
            "app = FastAPI(lifespan=lifespan)\n"
        },
        "ValueError in ticket_api/main.py line 7: boom",
        "ValueError",
    ),
}


def start_failure(project) -> ApiDidNotStart:
    """Why the project's API does not start, as the checker says it: its API under loop_sampler, as the checker runs
    it, and the fields the sampler gives."""
    argv = uvicorn_command("ticket_api.main:app", free_port(), script=Path(loop_sampler.__file__))
    result = subprocess.run(argv, cwd=project, env={**os.environ, **NO_TRACES}, capture_output=True, text=True)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    return startup_failure(loop_sampler.read_failure(output), output)


@pytest.mark.parametrize("kind", BROKEN)
def test_why_an_api_did_not_start_is_one_line_naming_the_file_and_line(kind, tmp_path):
    files, line, exception = BROKEN[kind]
    (tmp_path / "ticket_api").mkdir()
    for name, text in {"__init__.py": "", "ai.py": "", **files}.items():
        (tmp_path / "ticket_api" / name).write_text(text)
    failure = start_failure(tmp_path)
    assert (str(failure), failure.kind) == (line.replace("{p}", str(tmp_path)), exception)


def test_a_setting_the_api_refuses_is_its_own_one_line_and_names_no_exception(tmp_path):
    project = copy_tree(SNAPSHOTS / "end-of-m02", tmp_path / "project")
    (project / ".env").write_text("INTAKE_MODE=asynch\n")
    failure = start_failure(project)
    assert str(failure) == "invalid setting INTAKE_MODE='asynch': expected 'thread', 'blocking' or 'async'"
    assert failure.kind is None


def test_an_api_that_says_nothing_of_why_is_told_by_its_last_line():
    assert str(startup_failure(None, "INFO: started\nKilled\n\n")) == "Killed"
    assert str(startup_failure(None, "")) == "it stopped without a word"


def test_settings_the_projects_own_code_refuses_are_told_apart_by_its_exception_not_its_words(tmp_path):
    project = copy_tree(SNAPSHOTS / "end-of-m02", tmp_path / "project")
    assert not settings_refused(project)
    (project / ".env").write_text("INTAKE_MODE=asynch\n")
    assert settings_refused(project)
    with pytest.raises(InvalidSettings, match="INTAKE_MODE"):
        read_settings(project, ["INTAKE_MODE"])


def test_an_equals_bound_and_the_shapes_of_lessons_toml():
    assert expectation("connections_held", "= 4", 1).holds(4) and not expectation("x", "= 4", 1).holds(3)
    assert expectation("total_s", "< 7.5 scaled", 0.5).shown() == "< 3.75"


def test_every_check_of_lessons_toml_names_its_command_figures_and_hints_and_every_hint_is_used():
    known = set(hints())
    used = set(
        re.findall(r'"([a-z]+(?:-[a-z]+)+)"', (PROJECT_ROOT / "scripts/toolkit/check/lesson_checks.py").read_text())
    )
    for lesson in LESSONS:
        commands = {command["name"]: command for lesson in LESSONS for command in lesson.commands}
        for entry in lesson.checks:
            assert {"name", "says"} <= set(entry) and ("setting" in entry or entry["command"] in commands), entry
            bounds = {**commands.get(entry.get("command"), {}).get("expect", {})}
            bounds |= commands.get(entry.get("command"), {}).get("during", {})
            assert set(entry.get("figures", {})) <= set(bounds), entry["name"]
            named = {*entry.get("figures", {}).values(), *([entry["held"]] if "held" in entry else [])}
            assert named <= known, entry["name"]
            used |= named
    assert known - used == set(), "hints no check can give"
    assert {hint["kind"] for hint in hints().values()} <= {"essential", "actionable", "informative"}


def test_a_lessons_checks_come_in_order_each_after_what_it_needs(tmp_path):
    project = copy_tree(SNAPSHOTS / "end-of-m02", tmp_path / "project")
    lessons = load_lessons()[1]
    context = Context(project, lessons[-1], lessons)
    try:
        checks = {check.name: check for check in lesson_checks(context)}
    finally:
        context.close()  # nothing was started: building the checks runs none of them
    assert list(checks)[:3] == ["copy", "tests", "api"]
    assert checks["burst-async"].depends == ("api", "async-stall")
    assert checks["burst-thread"].depends == ("api", "thread-stall")
    assert all(checks[name].timing for name in ("blocking-stall", "async-stall", "burst-async"))
    assert not checks["default-mode"].timing and not checks["request-log"].timing
