"""The course's lessons as snapshots/lessons.toml states them: each lesson, the shape its commands' figures must have,
and snapshots/README.md written from it so the two never disagree."""

import operator
import tomllib
from dataclasses import dataclass

from scripts.toolkit.cli import PROJECT_ROOT

LESSONS = PROJECT_ROOT / "snapshots" / "lessons.toml"
LABS = "../nextia-learning-labs/C21/snapshots"  # where the course tells students to keep this repository
COMPARISONS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


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


def load_lessons() -> tuple[dict, list[Lesson]]:
    """The snapshots and lessons of lessons.toml."""
    data = tomllib.loads(LESSONS.read_text())
    lessons = [Lesson(commands=entry.pop("commands", []), **entry) for entry in data["lessons"]]
    return data["snapshots"], lessons


def shape_problems(figures: dict, expect: dict, speed: float) -> list[str]:
    """Compare figures with an `expect` table: equal lists, "< x" / "<= x" / "> x" / ">= x" bounds and
    "a to b" ranges (both ends included); bounds marked "scaled" are multiplied by the speed."""
    problems = []
    for key, wanted in expect.items():
        actual = figures.get(key)
        if isinstance(wanted, list):
            if actual != wanted:
                problems.append(f"{key} is {actual}, expected {wanted}")
            continue
        words = wanted.split()
        scale = speed if words[-1] == "scaled" else 1
        words = words[:-1] if words[-1] == "scaled" else words
        if len(words) == 3 and words[1] == "to":
            low, high = float(words[0]) * scale, float(words[2]) * scale
            holds, shown = actual is not None and low <= actual <= high, f"{low:g} to {high:g}"
        else:
            comparison, bound = words
            limit = float(bound) * scale
            holds, shown = actual is not None and COMPARISONS[comparison](actual, limit), f"{comparison} {limit:g}"
        if not holds:
            problems.append(f"{key} is {actual}, expected {shown}")
    return problems


def render_readme(snapshots: dict, lessons: list) -> str:
    """The README of the snapshots folder: each snapshot, then each lesson's copy step and expected output."""
    lines = [
        "# Lesson snapshots",
        "",
        "Each folder is a complete student project at the end of a module. A lesson copies a few files",
        "from a snapshot into your own project; afterwards `python -m pytest` prints the count below.",
        "Everything here is checked on every change (`python -m scripts.snapshots check`), and this file",
        "is written from `lessons.toml` (`python -m scripts.snapshots sync`).",
        "",
        "| Snapshot | What it is | `python -m pytest` |",
        "| --- | --- | --- |",
    ]
    lines += [f"| `{name}` | {s['title']} | `{s['tests']} passed` |" for name, s in snapshots.items()]
    for lesson in lessons:
        before = (
            f"`{lesson.before}`" if lesson.before in snapshots else f'the end of "{_title(lessons, lesson.before)}"'
        )
        files = " ".join(lesson.copy)
        ps_files = ", ".join("'" + f.replace("/", "\\") + "'" for f in lesson.copy)
        lines += [
            "",
            f"## {lesson.title}",
            "",
            f"Start from {before}. Copy from `{lesson.source}`:",
            "",
            "macOS / Linux",
            "",
            "```sh",
            f"S={LABS}/{lesson.source}",
            f'for f in {files}; do cp "$S/$f" "$f"; done',
            "```",
            "",
            "Windows (PowerShell)",
            "",
            "```powershell",
            f'$S = "{LABS.replace("/", chr(92))}\\{lesson.source}"',
            f'foreach ($f in {ps_files}) {{ Copy-Item "$S\\$f" $f }}',
            "```",
            "",
            f"Then `python -m pytest` prints `{lesson.tests} passed`.",
        ]
        if lesson.differs_from_source:
            lines.append(
                f"Your project then equals `{lesson.source}` except {', '.join(lesson.differs_from_source)}, "
                "which a later lesson adds."
            )
        if lesson.commands:
            lines += ["", "| Step | API started with | Command | Expect |", "| --- | --- | --- | --- |"]
            for command in lesson.commands:
                env = "".join(f"{k}={v} " for k, v in command.get("api_env", {}).items())
                lines.append(f"| {command['name']} | `{env}fastapi dev` | `{command['run']}` | {command['shows']} |")
    return "\n".join(lines) + "\n"


def _title(lessons: list, lesson_id: str) -> str:
    return next(lesson.title for lesson in lessons if lesson.id == lesson_id)
