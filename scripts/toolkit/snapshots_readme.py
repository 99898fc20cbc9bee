"""snapshots/README.md, written from lessons.toml so the two never disagree: each snapshot, each lesson's copy step
(`copy_commands`, which scripts.check shows a student too) and commands, and when to run scripts.check."""

from scripts.toolkit.lessons import Lesson

LABS = "../nextia-learning-labs/C21/snapshots"  # where the course tells students to keep this repository
# The end of snapshots/README.md: when to run scripts.check, and two of its real outputs (run on the lab's machine).
CHECK_SECTION = """
## Check your project

After a lesson's copy step, and whenever something looks wrong, run the lab's checker in your
project's folder, with its virtual environment active:

```sh
python ../nextia-learning-labs/C21/scripts/check.py
```

(Windows: `python ..\\nextia-learning-labs\\C21\\scripts\\check.py`.) It holds your project to the
promises above: the copy step, the count of `python -m pytest`, then each command's result against
your own API, in each `INTAKE_MODE`. Run on `end-of-m01`, before the copy step, it begins:

```
/home/student/larkfield, checked against "I/O versus CPU work" (m02-io-versus-cpu):

FAILED           copy: the lesson's 9 files are copied
                 expected the 9 files copied from end-of-m02
                 measured 2 missing (tests/test_concurrency.py, scripts/stall.py); 7 still as at
                   end-of-m01 (ticket_api/config.py, ticket_api/intake.py, ticket_api/main.py,
                   ticket_api/provider.py, ticket_api/repository.py, tests/fakes.py, README.md)
                 hint: Copy ticket_api/config.py, ticket_api/intake.py, ticket_api/main.py,
                   ticket_api/provider.py, ticket_api/repository.py, tests/fakes.py,
                   tests/test_concurrency.py, scripts/stall.py, README.md from the snapshot
                   end-of-m02, in your project's folder:
                       macOS / Linux:
                       S=../nextia-learning-labs/C21/snapshots/end-of-m02
                       for f in ticket_api/config.py ticket_api/intake.py ticket_api/main.py ticket_api/provider.py ticket_api/repository.py tests/fakes.py tests/test_concurrency.py scripts/stall.py README.md; do cp "$S/$f" "$f"; done
                       Windows (PowerShell):
                       $S = "..\\nextia-learning-labs\\C21\\snapshots\\end-of-m02"
                       foreach ($f in 'ticket_api\\config.py', 'ticket_api\\intake.py', 'ticket_api\\main.py', 'ticket_api\\provider.py', 'ticket_api\\repository.py', 'tests\\fakes.py', 'tests\\test_concurrency.py', 'scripts\\stall.py', 'README.md') { Copy-Item "$S\\$f" $f }
                       (the lesson, "Guided practice: make the server stall, then fix it (step 1)")
                 rerun it alone: python ../nextia-learning-labs/C21/scripts/check.py --only copy
FAILED           tests: python -m pytest prints 137 passed
                 expected 137 passed
                 measured 128 passed in 8.27s
                 missing: tests/test_concurrency.py (9 tests)
                 hint: Tests of the lesson are missing from your project
                   (tests/test_concurrency.py): they come with the copy step. Copy them from the
                   snapshot, then run python -m pytest again.
                       (the lesson, "Guided practice: make the server stall, then fix it (step 2)")
                 rerun it alone: python ../nextia-learning-labs/C21/scripts/check.py --only tests
...
10 checks: 2 failed, 8 could not check (16 s)
```

and once the files are copied, on `end-of-m02`, it ends with:

```
...
passed           burst-thread: 32 tickets at once in thread mode: the pool's 10 connections, held,
                   let 10 reach the provider
                 measured DB connections in use, median 10; provider calls in flight (peak) 10
passed           burst-async: 32 tickets at once in async mode: all 32 wait on the provider together
                 measured status codes [201]; DB connections in use, median 0; provider calls in
                   flight (peak) 32

12 checks: 12 passed (61 s)
```

Every check, its options and a failure explained: [the root README](../README.md#check-your-project).
"""


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
            f"`{lesson.before}`" if lesson.before in snapshots else f'the end of "{_title(lessons, lesson.before)}"'
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
    return "\n".join(lines) + "\n" + CHECK_SECTION


def _title(lessons: list[Lesson], lesson_id: str) -> str:
    return next(lesson.title for lesson in lessons if lesson.id == lesson_id)
