"""The checks of a lesson, built from lessons.toml: the copy step, the test count, the API's start, then the
lesson's own `checks` (a setting, a command's figures, the request log), each a small function."""

import functools
import re
from collections import Counter
from dataclasses import replace

from scripts.toolkit.check.checks import Check, Result, failed, passed
from scripts.toolkit.check.context import Context
from scripts.toolkit.check.report import COMPUTING_CPU, expected_text, measured_text, where_held
from scripts.toolkit.check.student_api import CHECK_SPEED, COMMAND_TIMEOUT_S, ApiDidNotStart, student_api
from scripts.toolkit.check.student_project import (
    EDITED,
    MISSING,
    NOT_COPIED,
    SNAPSHOTS,
    file_states,
    read_settings,
    settings_given,
    settings_refused,
)
from scripts.toolkit.lessons.snapshots_readme import copy_commands
from scripts.toolkit.lessons.spec import CommandTimedOut, command_speed, expectation, find_command, lesson_chain
from scripts.toolkit.lessons.suites import collected_tests, run_suite

SUITE_TIMEOUT_S = 300
HELD_S = 1.0  # the event loop held this long in all, in spans of 0.1 s or more: worth saying, and the likely cause
# Why an API did not start (its one line begins with the exception's name) -> the hint.
START_HINTS = dict.fromkeys(("SyntaxError", "IndentationError", "TabError"), "api-syntax-error")
START_HINTS |= dict.fromkeys(("ImportError", "ModuleNotFoundError"), "api-import-error")


def lesson_checks(ctx: Context) -> list[Check]:
    """The checks of the lesson and of the lessons before it, in order."""
    chain = lesson_chain(ctx.lessons, ctx.lesson.id)
    files = [name for lesson in chain for name in lesson.copy]
    checks = [
        Check("copy", f"the lesson's {len(files)} files are copied", lambda _: check_copy(ctx)),
        Check("tests", f"python -m pytest prints {ctx.lesson.tests} passed", lambda _: check_tests(ctx)),
    ]
    if any(lesson.checks for lesson in chain):
        checks.append(Check("api", "the API starts with your settings", lambda _: check_api_starts(ctx), ("copy",)))
    for entry in (entry for lesson in chain for entry in lesson.checks):
        check = check_setting if "setting" in entry else check_log if "log" in entry else check_command
        run = functools.partial(check, ctx, entry)
        needs = ("api", *entry.get("needs", []))
        checks.append(Check(entry["name"], entry["says"], run, needs, timing=check is check_command))
    return checks


def check_copy(ctx: Context) -> Result:
    """Each file the lesson copies is there, and is not the one of before the lesson."""
    states = file_states(ctx.project, ctx.lessons, ctx.lesson.id)
    source, before = ctx.lesson.source, lesson_chain(ctx.lessons, ctx.lesson.id)[0].before
    edited = [name for name, state in states.items() if state == EDITED]
    info = [f"{name} differs from {source}'s: your own changes, or an older copy (not a failure)" for name in edited]
    missing = [name for name, state in states.items() if state == MISSING]
    old = [name for name, state in states.items() if state == NOT_COPIED]
    if not missing and not old:
        return passed(info)
    measured = [f"{len(missing)} missing ({', '.join(missing)})"] if missing else []
    measured += [f"{len(old)} still as at {before} ({', '.join(old)})"] if old else []
    todo = [name for name in states if name in missing or name in old]
    shell, powershell = copy_commands(source, todo)
    expected = f"the {len(states)} files copied from {source}"
    hint_values = {"files": ", ".join(todo), "source": source, "shell": shell, "powershell": powershell}
    return replace(failed(expected, "; ".join(measured), "copy-step", **hint_values), info=info)


def check_tests(ctx: Context) -> Result:
    """The project's own suite prints exactly the lesson's count; else which tests fail, and which are missing."""
    expected, env = ctx.lesson.tests, {"DATABASE_URL": ctx.server}
    suite = run_suite(ctx.project, env, SUITE_TIMEOUT_S)
    if suite.passed_exactly(expected):
        return passed()
    theirs = set(collected_tests(ctx.project, env))
    missing = sorted(set(collected_tests(SNAPSHOTS / ctx.lesson.source, env)) - theirs)
    if not missing and not suite.failures and suite.counts == {"passed": len(theirs)}:
        return passed([f"{len(theirs) - expected} tests of your own pass too (not counted by the lesson)"])
    reason = [f"failing: {line}" for line in suite.failures[:10]]
    reason += [f"... and {len(suite.failures) - 10} more failing"] if len(suite.failures) > 10 else []
    by_file = Counter(test.split("::")[0] for test in missing)
    reason += [f"missing: {name} ({count} tests)" for name, count in by_file.items()]
    hint_id = "tests-missing" if missing else "tests-failing"
    return failed(f"{expected} passed", suite.summary, hint_id, "\n".join(reason), files=", ".join(by_file))


def check_api_starts(ctx: Context) -> Result:
    """The student's API starts with their own settings (their terminal's, their .env) and answers /health."""
    try:
        with student_api(ctx.stack, ctx.project, {}):
            return passed()
    except ApiDidNotStart as exc:
        hint_id = START_HINTS.get(exc.kind or "", "api-start-failed")
        if hint_id == "api-start-failed" and settings_refused(ctx.project):
            hint_id = "api-bad-setting"
        return failed("the API answers GET /health", f"it stopped: {exc}", hint_id, line=str(exc))


def check_setting(ctx: Context, entry: dict, attempt: int) -> Result:
    """Each setting of the entry has the expected value, as the student's API reads it."""
    wanted = {name: str(value) for name, value in entry["setting"].items()}
    values = read_settings(ctx.project, list(wanted))
    wrong = [name for name in wanted if values.get(name) != wanted[name]]
    if not wrong:
        return passed()
    name = wrong[0]
    value, where = settings_given(ctx.project).get(name, (values.get(name), "ticket_api/config.py's default"))
    hint_id = {"your terminal": "setting-in-terminal"}.get(where, "setting-in-env-file")
    hint_id = "setting-default-changed" if where.endswith("default") else hint_id
    return failed(
        f"{name}={wanted[name]}", f"{name}={value} ({where})", hint_id, name=name, value=value, wanted=wanted[name]
    )


def check_command(ctx: Context, entry: dict, attempt: int) -> Result:
    """A lesson command against the student's API: the figures the entry judges have the lesson's shape."""
    command = find_command(ctx.lessons, entry["command"])
    try:
        run = ctx.run(entry["command"], entry.get("api_env", {}), fresh=attempt > 1)
    except ApiDidNotStart as exc:
        env = {**command.get("api_env", {}), **entry.get("api_env", {})}
        return failed("the API answers GET /health", f"it stopped ({env}): {exc}", "api-start-failed", line=str(exc))
    except CommandTimedOut as exc:  # no timing noise: a correct project ends in a fraction of the bound
        hint_id = entry.get("held") or Counter(entry["figures"].values()).most_common(1)[0][0]
        expected = f"`{command['run']}` ends within {COMMAND_TIMEOUT_S} s"
        return replace(failed(expected, f"{exc}: tickets still waiting", hint_id), may_be_noise=False)
    speed = command_speed(command, CHECK_SPEED)
    bounds = {**command.get("expect", {}), **command.get("during", {})}
    judged = [expectation(key, bounds[key], speed) for key in entry["figures"]]
    wrong = [e for e in judged if not e.holds(run.figures.get(e.key))]
    where = where_held(run)
    held = run.figures["loop_held_s"] >= HELD_S
    if not wrong:
        measured = "; ".join(measured_text(e.key, run.figures.get(e.key)) for e in judged)
        return replace(passed([where] if where and held else []), measured=measured)
    # A held event loop explains slow answers and tickets that do not overlap alike: its hint wins.
    hint_id = entry["held"] if held and "held" in entry else entry["figures"][wrong[0].key]
    if hint_id == "loop-held" and run.held and max(report["cpu"] or 0 for report in run.held) >= COMPUTING_CPU:
        hint_id = "cpu-in-async"
    reason = [where] if where else []
    if run.figures.get("errors"):
        reason.append(f"error codes of the tickets: {', '.join(run.figures['errors'])}")
    given = [f"{n}={v} ({w})" for n, (v, w) in settings_given(ctx.project).items() if n != "DATABASE_URL"]
    reason += [f"your settings: {', '.join(given)}"] if given else []
    result = failed(
        "; ".join(expected_text(e) for e in wrong),
        "; ".join(measured_text(e.key, run.figures.get(e.key)) for e in wrong),
        hint_id,
        "\n".join(reason) or None,
        where=where or "",
    )
    # No timing noise fails a ticket, nor holds the event loop at a line of the project for a second.
    result.may_be_noise = all(e.key != "statuses" for e in wrong) and not (held and "held" in entry)
    return result


def check_log(ctx: Context, entry: dict, attempt: int) -> Result:
    """Every POST /v1/tickets line of the API's log, while the command ran, matches the entry's `log`."""
    run = ctx.run(entry["command"], entry.get("api_env", {}))
    shown = re.sub(r"\\d\+", "…", entry["log"]).strip()
    lines = [line.strip() for line in run.log if "POST /v1/tickets" in line]
    if not lines:
        return failed(
            f"a line `{shown}` per ticket", "no POST /v1/tickets line in the API's log", "request-log-missing"
        )
    differ = [line for line in lines if not re.search(entry["log"], line)]
    if not differ:
        return passed()
    first = re.sub(r" id=\S+", "", differ[0])
    measured = f"{len(differ)} of {len(lines)} lines differ; the first: `{first}`"
    return failed(f"every line like `{shown}`", measured, "request-log", line=first)
