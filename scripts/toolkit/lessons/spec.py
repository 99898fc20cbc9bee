"""The course's lessons as snapshots/lessons.toml states them: each lesson, the shape its commands' figures must
have, and a lesson command run. `python -m scripts.snapshots` holds the snapshots to them, `python -m scripts.check`
a student's project; snapshots_readme writes snapshots/README.md from them."""

import json
import operator
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from scripts.toolkit.cli import PROJECT_ROOT, CommandError
from scripts.toolkit.running.commands import run_to_completion

SNAPSHOTS = PROJECT_ROOT / "snapshots"
LESSONS = SNAPSHOTS / "lessons.toml"
COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "=": operator.eq}
COMMAND_TIMEOUT_S = 180  # the longest lesson command (a blocking stall at speed 1) takes about 20 s
T = TypeVar("T")


@dataclass
class Lesson:
    """One lesson of lessons.toml."""

    id: str
    title: str
    before: str
    source: str
    copy: list[str]
    tests: int
    differs_from_source: list[str]
    commands: list[dict]
    checks: list[dict] = field(default_factory=list)  # what scripts.check adds to the commands' own figures


def load_lessons() -> tuple[dict, list[Lesson]]:
    """The snapshots and lessons of lessons.toml."""
    data = tomllib.loads(LESSONS.read_text())
    lessons = [
        Lesson(commands=entry.pop("commands", []), checks=entry.pop("checks", []), **entry) for entry in data["lessons"]
    ]
    return data["snapshots"], lessons


def find_lesson(lessons: list[Lesson], lesson_id: str) -> Lesson:
    """The lesson whose id is `lesson_id`."""
    return next(lesson for lesson in lessons if lesson.id == lesson_id)


def find_command(lessons: list[Lesson], name: str) -> dict:
    """The lesson command called `name`, of any lesson (a check may judge an earlier lesson's command)."""
    return next(command for lesson in lessons for command in lesson.commands if command["name"] == name)


def lesson_chain(lessons: list[Lesson], lesson_id: str) -> list[Lesson]:
    """The lessons that lead to `lesson_id`, following each one's `before`, the first one first."""
    chain = [find_lesson(lessons, lesson_id)]
    while chain[0].before in {lesson.id for lesson in lessons}:  # else it starts from a snapshot
        chain.insert(0, find_lesson(lessons, chain[0].before))
    return chain


@dataclass
class Expectation:
    """One entry of an `expect` table, its bounds multiplied by the speed where it says "scaled"."""

    key: str
    comparison: str  # "<", "<=", ">", ">=", "=", "to" (a range, both ends included) or "equals" (a list)
    bounds: tuple

    def holds(self, actual: object) -> bool:
        """Whether a measured figure has the expected shape (a missing figure never has)."""
        if self.comparison == "equals":
            return actual == list(self.bounds)
        if not isinstance(actual, int | float):
            return False
        if self.comparison == "to":
            return self.bounds[0] <= actual <= self.bounds[1]
        return COMPARISONS[self.comparison](actual, self.bounds[0])

    def shown(self, bound: Callable[[float], str] = "{:g}".format) -> str:
        """`< 20`, `15 to 22`, `[201]`: as lessons.toml words it, scaled; `bound` writes a bound (scripts.check's
        with its unit)."""
        if self.comparison == "equals":
            return str(list(self.bounds))
        if self.comparison == "to":
            return f"{bound(self.bounds[0])} to {bound(self.bounds[1])}"
        return f"{self.comparison} {bound(self.bounds[0])}"


def expectation(key: str, wanted: object, speed: float) -> Expectation:
    """Parse one `expect` entry: a list must be equal; "< x" ... "= x" are bounds and "a to b" a range."""
    if isinstance(wanted, list):
        return Expectation(key, "equals", tuple(wanted))
    words = str(wanted).split()
    scale = speed if words[-1] == "scaled" else 1
    words = words[:-1] if words[-1] == "scaled" else words
    if len(words) == 3 and words[1] == "to":
        return Expectation(key, "to", (float(words[0]) * scale, float(words[2]) * scale))
    comparison, bound = words
    return Expectation(key, comparison, (float(bound) * scale,))


def shape_problems(figures: dict, expect: dict, speed: float) -> list[str]:
    """Compare figures with an `expect` table; bounds marked "scaled" are multiplied by the speed."""
    wanted = [expectation(key, value, speed) for key, value in expect.items()]
    return [f"{e.key} is {figures.get(e.key)}, expected {e.shown()}" for e in wanted if not e.holds(figures.get(e.key))]


def once_more_on_a_timing_miss(
    attempt: Callable[[int], T], timing_miss: Callable[[T], bool], say: Callable[[T], None]
) -> tuple[T, int]:
    """`attempt(1)`, then `attempt(2)` once if the first missed only a timing bound (`say` tells it): a busy machine
    slows tickets, it fails none. The last attempt's result and how many ran."""
    result = attempt(1)
    if not timing_miss(result):
        return result, 1
    say(result)
    return attempt(2), 2


class CommandTimedOut(CommandError):
    """A lesson command still running at its timeout: the API answered too slowly, or not at all."""


def command_speed(command: dict, speed: float) -> float:
    """The simulator's speed for a lesson command: its own `speed` in lessons.toml wins over the caller's."""
    return command.get("speed", speed)


def run_command(command: dict, url: str, speed: float, cwd: Path, timeout_s: float = COMMAND_TIMEOUT_S) -> dict:
    """Run a lesson command (`python -m ...`) from `cwd` against the API at `url`; its --json figures.

    Each of its `scaled_args` is passed multiplied by the speed. CommandError if it cannot run.
    """
    argv = [sys.executable, *command["run"].removeprefix("python").split(), "--url", url, "--json"]
    for flag, value in command.get("scaled_args", {}).items():
        argv += [flag, f"{value * speed:g}"]
    try:
        result = run_to_completion(argv, cwd, timeout_s=timeout_s)
    except subprocess.TimeoutExpired:
        raise CommandTimedOut(f"`{command['run']}` did not finish within {timeout_s:g} s") from None
    if result.returncode not in (0, 1):  # 1 = some tickets failed: the figures still say what happened
        raise CommandError(f"`{command['run']}` exited {result.returncode}: {result.stderr.strip()[-300:]}")
    return json.loads(result.stdout)
