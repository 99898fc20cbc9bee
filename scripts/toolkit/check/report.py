"""What scripts.check prints: every check in plain words, or as JSON; the hints' texts come from hints.toml; a lesson
command's figures and where the event loop was held, in words."""

import json
import re
import textwrap
import tomllib
from dataclasses import asdict
from functools import cache
from pathlib import Path

from scripts.toolkit.check.checks import ERROR, FAILED, SKIPPED, WORDS, Result
from scripts.toolkit.check.student_api import Run
from scripts.toolkit.lessons.spec import Expectation
from scripts.toolkit.reports.text import readable_ms

HINTS_FILE = Path(__file__).with_name("hints.toml")
WIDTH = 100
CHECK_EXIT_CODES = "Exit codes: 0 every check passed, 1 a check failed, 2 the checker could not run (or bad arguments)."
INDENT = " " * 17
UNIT = re.compile(r"(\d) (ms|s)\b")
NOT_IN_JSON = ("hint_values", "may_be_noise", "because", "cause")  # what the report reads, not the reader
# How a figure of a lesson command reads to a student: its words and its unit.
FIGURES = {
    "statuses": ("status codes", ""),
    "health_answers": ("answers of /health", ""),
    "health_median_ms": ("/health median", "ms"),
    "health_slowest_ms": ("slowest /health", "ms"),
    "health_waited_share": ("/health waiting, of the run", "%"),
    "total_s": ("the tickets took", "s"),
    "provider_calls_at_once": ("provider calls at once (peak)", ""),
    "connections_held": ("DB connections held through the AI wait (peak)", ""),
    "loop_held_s": ("event loop held, in all", "s"),
    "db_in_use_median": ("DB connections in use, median", ""),
    "provider_in_flight_max": ("provider calls in flight (peak)", ""),
}
# The CPU of the API's process while its loop was held, in cores: a call that waits uses a percent or two; CPU work
# all it gets, which on a busy machine (other processes on the cores) can be well under one core: 46% in one run, 19%
# with three times scripts.busy's load beside it.
COMPUTING_CPU = 0.08


@cache
def hints() -> dict[str, dict]:
    """hints.toml: {id: {kind, section, text}}."""
    return tomllib.loads(HINTS_FILE.read_text())


def hint_text(result: Result) -> str | None:
    """The result's hint, its {names} filled in."""
    if result.hint_id is None:
        return None
    values = {key: str(value) for key, value in result.hint_values.items()}
    return hints()[result.hint_id]["text"].format_map(_Blank(values))


def render_json(results: list[Result], header: dict) -> str:
    """Every check with name, description, status, expected, measured, reason, hint, lesson_section, and more."""
    checks = []
    for result in results:
        hint = hints()[result.hint_id] if result.hint_id else {}
        fields = {key: value for key, value in asdict(result).items() if key not in NOT_IN_JSON}
        checks.append(
            fields | {"hint": hint_text(result), "hint_kind": hint.get("kind"), "lesson_section": hint.get("section")}
        )
    return json.dumps({**header, "checks": checks}, indent=2, ensure_ascii=False)


def render(results: list[Result], header: dict) -> str:
    """The checks one after another, as a student reads them, then one line of totals."""
    lines = [f'{header["project"]}, checked against "{header["lesson_title"]}" ({header["lesson"]}):', ""]
    for result in results:
        lines += _check_lines(result)
    counts = {status: sum(1 for r in results if r.status == status) for status in WORDS}
    totals = ", ".join(f"{n} {WORDS[status]}" for status, n in counts.items() if n)
    checks = f"{len(results)} check" + ("" if len(results) == 1 else "s")
    lines += ["", f"{checks}: {totals} ({header['seconds']:.0f} s)"]
    return "\n".join(lines)


def exit_code(results: list[Result]) -> int:
    """0 every check passed, 1 a check failed, 2 the checker could not run one (and none failed)."""
    statuses = {result.status for result in results}
    return 1 if FAILED in statuses else 2 if ERROR in statuses else 0


def _check_lines(result: Result) -> list[str]:
    word = WORDS[result.status].upper() if result.status == FAILED else WORDS[result.status]
    first = f"{word:<16} {result.name}: {result.description}"
    lines = textwrap.wrap(first, WIDTH, subsequent_indent=INDENT + "  ", break_on_hyphens=False)
    if result.status == SKIPPED:
        return lines + _wrapped(f"because {result.because} failed")
    if result.status == ERROR:
        return lines + _wrapped(result.cause or "") + [f"{INDENT}rerun it alone: {result.rerun}"]
    if result.status == FAILED:
        lines += _wrapped(f"expected {result.expected}")
        lines += _wrapped(f"measured {result.measured}" + (" (failed twice)" if result.runs == 2 else ""))
        for line in (result.reason or "").splitlines():
            lines += _wrapped(line)
    elif result.measured:
        lines += _wrapped(f"measured {result.measured}")
    lines += [line for note in result.info for line in _wrapped(f"note: {note}")]
    if result.status == FAILED:
        hint = hints()[result.hint_id] if result.hint_id else None
        first, *commands = (hint_text(result) or "").splitlines() or [""]
        lines += _wrapped(f"hint: {first}")
        lines += [f"{INDENT}      {line}" for line in commands]  # lines to copy: never wrapped
        if hint:
            lines += _wrapped(f'(the lesson, "{hint["section"]}")', INDENT + " " * 6)
        lines.append(f"{INDENT}rerun it alone: {result.rerun}")  # a command to copy: never wrapped
    return lines


def _wrapped(text: str, indent: str = INDENT) -> list[str]:
    kept = UNIT.sub("\\1\xa0\\2", text)  # a figure and its unit on one line: `0.0 s`, not `0.0` then `s`
    wrapped = textwrap.wrap(kept, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False)
    return [line.replace("\xa0", " ") for line in wrapped] or [indent]


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return f"{{{key}}}"


def where_held(run: Run) -> str | None:
    """Where the event loop was held longest, in words, from loop_sampler's reports; None if it never was."""
    if not run.held:
        return None
    places: dict[tuple, list[dict]] = {}
    for report in run.held:
        places.setdefault((report["file"], report["line"]), []).append(report)
    reports = max(places.values(), key=lambda group: sum(report["ms"] for report in group))
    first, longest = reports[0], max(report["ms"] for report in reports)
    cpu = max(report["cpu"] or 0 for report in reports)
    doing = f"computing (CPU {min(cpu, 1):.0%})" if cpu >= COMPUTING_CPU else f"waiting (CPU {cpu:.0%})"
    times = "once" if len(reports) == 1 else f"{len(reports)} times"
    text = (
        f"the event loop was held by `{first['code']}` in {first['file']} line {first['line']} "
        f"({first['function']}), {times}, up to {readable_ms(longest)} at a time, {doing}"
    )
    inner = first.get("waiting_in")
    if inner:
        text += f"; under it, `{inner['code']}` in {inner['file']} line {inner['line']} ({inner['function']})"
    return text


def expected_text(e: Expectation) -> str:
    """What a lesson command's figure should be, in words: `/health median < 20 ms`."""
    label, unit = FIGURES.get(e.key, (e.key, ""))
    return f"{label} {e.shown(lambda bound: _value(bound, unit, bound=True))}"


def measured_text(key: str, value: object) -> str:
    """A lesson command's figure as measured, in words: `/health median 3.4 ms`."""
    label, unit = FIGURES.get(key, (key, ""))
    return f"{label} {value if value is None or isinstance(value, list) else _value(value, unit)}"


def _value(value: object, unit: str, bound: bool = False) -> str:
    """A figure with its unit: a bound as exact as lessons.toml gives it, a measurement rounded."""
    if unit == "ms" and isinstance(value, int | float):
        return f"{value / 1000:g} s" if bound and value >= 1000 else f"{value:g} ms" if bound else readable_ms(value)
    if unit == "s" and isinstance(value, int | float):
        return f"{value:g} s" if bound else f"{value:.1f} s"
    if unit == "%" and isinstance(value, int | float):
        return f"{value:.0%}"
    return f"{value:g}" if isinstance(value, int | float) else str(value)
