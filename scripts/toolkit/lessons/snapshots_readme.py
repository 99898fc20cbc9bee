"""snapshots/README.md, written from lessons.toml so the two never disagree: each snapshot, each lesson's copy step
(`copy_commands`, which scripts.check shows a student too) and commands, and when to run scripts.check."""

from pathlib import Path

from scripts.toolkit.lessons.spec import Lesson, find_lesson

LABS = "../nextia-learning-labs/C21/snapshots"  # where the course tells students to keep this repository
# The end of snapshots/README.md: when to run scripts.check, and two of its real outputs (run on the lab's machine).
CHECK_SECTION = Path(__file__).with_name("snapshots_check.md")


def copy_commands(source: str, files: list[str]) -> tuple[str, str]:
    """The lines that copy `files` from the snapshot `source` into a project: (macOS / Linux, Windows PowerShell)."""
    ps_files = ", ".join("'" + f.replace("/", "\\") + "'" for f in files)
    shell = f'S={LABS}/{source}\nfor f in {" ".join(files)}; do cp "$S/$f" "$f"; done'
    powershell = (
        f'$S = "{LABS.replace("/", chr(92))}\\{source}"\nforeach ($f in {ps_files}) {{ Copy-Item "$S\\$f" $f }}'
    )
    return shell, powershell


def render_readme(snapshots: dict, lessons: list[Lesson]) -> str:
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
            f"`{lesson.before}`"
            if lesson.before in snapshots
            else f'the end of "{find_lesson(lessons, lesson.before).title}"'
        )
        shell, powershell = copy_commands(lesson.source, lesson.copy)
        lines += [
            "",
            f"## {lesson.title}",
            "",
            f"Start from {before}. Copy from `{lesson.source}`:",
            "",
            "macOS / Linux",
            "",
            "```sh",
            shell,
            "```",
            "",
            "Windows (PowerShell)",
            "",
            "```powershell",
            powershell,
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
    return "\n".join(lines) + "\n\n" + CHECK_SECTION.read_text()
