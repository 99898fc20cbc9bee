"""Checks the way check50 runs them: each a small function, its description the sentence the student reads.

A check whose dependency did not pass is not run: it "could not check, because <dependency> failed". A timing
check that fails runs once more before its failure is reported ("failed twice"), unless what failed is no matter
of timing (tickets that did not answer 201). A problem of the checker or of the environment is "could not run"
(status `error`), never counted against the student. Every check bounds its own waiting (subprocess and start-up
timeouts), so a run always ends.
"""

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from scripts.toolkit.cli import CommandError, progress
from scripts.toolkit.commands.options import Clock
from scripts.toolkit.lessons.spec import once_more_on_a_timing_miss
from ticket_api.errors import StartupError

PASSED, FAILED, SKIPPED, ERROR = "passed", "failed", "skipped", "error"
WORDS = {PASSED: "passed", FAILED: "failed", SKIPPED: "could not check", ERROR: "could not run"}  # as a student reads


@dataclass
class Result:
    """What one check found, as `--json` gives it (the hint's text is filled in from its id by the report)."""

    name: str
    description: str
    status: str = PASSED
    expected: str | None = None
    measured: str | None = None
    reason: str | None = None  # why it failed, or why it could not check or run, as a sentence
    hint_id: str | None = None
    hint_values: dict = field(default_factory=dict)  # what the hint's text names: files, settings, ...
    info: list[str] = field(default_factory=list)  # information, never a failure
    runs: int = 1
    may_be_noise: bool = True  # False: a failure of a timing check that a second run cannot change (tickets failed)
    because: str | None = None  # the dependency that failed, for a skipped check
    cause: str | None = None  # what kept the checker from running it, for a check that could not run
    rerun: str | None = None  # the command that runs this check alone
    seconds: float = 0.0


@dataclass
class Check:
    """One check: `run(attempt)` returns its Result (attempt 2 is the second run of a timing check)."""

    name: str
    description: str
    run: Callable[[int], Result]
    depends: tuple[str, ...] = ()
    timing: bool = False


def passed(info: list[str] | None = None) -> Result:
    """A passed check's result (its name and description are filled in by run_checks)."""
    return Result("", "", PASSED, info=info or [])


def failed(expected: str, measured: str, hint_id: str, reason: str | None = None, **hint_values: object) -> Result:
    """A failed check's result: what was expected and measured, with units, and the hint for the likely mistake."""
    return Result("", "", FAILED, expected, measured, reason, hint_id, dict(hint_values))


def with_dependencies(checks: list[Check], only: list[str]) -> list[Check]:
    """The checks named in `only` and every check they depend on, in the checks' order."""
    by_name = {check.name: check for check in checks}
    wanted, waiting = set(), list(only)
    while waiting:
        name = waiting.pop()
        if name not in wanted:
            wanted.add(name)
            waiting += by_name[name].depends
    return [check for check in checks if check.name in wanted]


def run_checks(checks: list[Check], rerun: Callable[[str], str], clock: Clock) -> list[Result]:
    """Run the checks in order; `rerun(name)` is the command line that runs one alone."""
    results: dict[str, Result] = {}
    for check in checks:
        blocked = next((results[d] for d in check.depends if d in results and results[d].status != PASSED), None)
        if blocked is not None:
            because = blocked.because or blocked.name
            reason = f"could not check, because {because} failed"
            results[check.name] = Result(check.name, check.description, SKIPPED, reason=reason, because=because)
            continue
        progress(f"[{clock}] {check.name}: {check.description} ...")
        started = time.monotonic()
        result = _run(check, clock)
        result.seconds = round(time.monotonic() - started, 1)
        result.rerun = rerun(check.name) if result.status in (FAILED, ERROR) else None
        results[check.name] = result
        progress(f"[{clock}] {check.name}: {_word(result)}")
    return list(results.values())


def _run(check: Check, clock: Clock) -> Result:
    """The check's result; a timing check that fails, unless no timing explains it, is run once more."""

    def timing_miss(result: Result) -> bool:
        return check.timing and result.status == FAILED and result.may_be_noise

    def say(result: Result) -> None:
        progress(f"[{clock}] {check.name}: failed ({result.measured}); running it once more")

    result, runs = once_more_on_a_timing_miss(functools.partial(_attempt, check), timing_miss, say)
    if runs == 2:
        result.runs = 2 if result.status == FAILED else 1
        if result.status == PASSED:
            result.info.append("it failed once, and passed when run again")
    return result


def _attempt(check: Check, attempt: int) -> Result:
    try:
        result = check.run(attempt)
    except (CommandError, StartupError) as exc:
        result = _could_not_run(str(exc))
    except Exception as exc:  # a bug of the checker: said in one line, never counted against the student
        result = _could_not_run(f"the checker failed ({type(exc).__name__}: {exc})")
    result.name, result.description = check.name, check.description
    return result


def _could_not_run(cause: str) -> Result:
    """The result of a check that the checker or the environment kept from running (status `error`)."""
    return Result("", "", ERROR, reason=f"{WORDS[ERROR]}: {cause}", cause=cause)


def _word(result: Result) -> str:
    if result.status == FAILED:
        return "failed twice" if result.runs == 2 else "failed"
    return {PASSED: "passed", ERROR: result.reason or WORDS[ERROR]}.get(result.status, result.status)
