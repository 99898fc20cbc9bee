"""snapshots/README.md, written from snapshots/lessons.toml so the two never disagree."""

LABS = "../nextia-learning-labs/C21/snapshots"  # where the course tells students to keep this repository


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
