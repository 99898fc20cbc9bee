"""Check your project against a lesson's promises, in plain words.

In your project's folder, with its virtual environment active:

    python ../nextia-learning-labs/C21/scripts/check.py

(or from the lab's folder: python -m scripts.check PROJECT_DIR). Run it after a lesson's copy step, and whenever
something looks wrong. It runs your tests, starts your API in each INTAKE_MODE on free ports with a simulator of
its own and a database of its own on your PostgreSQL (dropped after), and says for each of the lesson's promises
whether your project keeps it: what was expected, what was measured, and a hint. About a minute and a half; it
changes nothing in your folder. The checks come from this lab: `git pull` it to get new ones.
"""

import sys
from pathlib import Path

if not __package__:  # run as a file: the lab's folder, not scripts/, is where the lab's packages are found
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

# The imports come after: run as a file, they need the line above.
import argparse  # noqa: E402
import time  # noqa: E402

from scripts.toolkit.check.checks import run_checks, with_dependencies  # noqa: E402
from scripts.toolkit.check.context import Context  # noqa: E402
from scripts.toolkit.check.lesson_checks import lesson_checks  # noqa: E402
from scripts.toolkit.check.report import CHECK_EXIT_CODES, exit_code, render, render_json  # noqa: E402
from scripts.toolkit.check.student_project import default_lesson  # noqa: E402
from scripts.toolkit.cli import PROJECT_ROOT, CommandError, command_parser, progress, run  # noqa: E402
from scripts.toolkit.commands.options import Clock, add_json  # noqa: E402
from scripts.toolkit.lessons.spec import find_lesson, load_lessons  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, run the checks, print them; the exit code says how it went."""
    _, lessons = load_lessons()
    parser = command_parser(_program(), __doc__, CHECK_EXIT_CODES)
    parser.add_argument("project", nargs="?", default=".", help="your project's folder (default: this folder)")
    parser.add_argument(
        "--lesson",
        choices=[lesson.id for lesson in lessons],
        help="the lesson to check against (default: the latest whose copy step your project shows)",
    )
    parser.add_argument("--only", action="append", metavar="NAME", help="one check, and the checks it needs")
    parser.add_argument("--list", action="store_true", help="list the lesson's checks and their names, then stop")
    add_json(parser, "every check")
    args = parser.parse_args(argv)

    project = Path(args.project).resolve()
    if project == PROJECT_ROOT:
        raise CommandError("this is the lab's own folder: give your project's folder (python -m scripts.check PATH)")
    if not (project / "ticket_api").is_dir():
        raise CommandError(f"{project} has no ticket_api/ folder: run this in your project's folder, or give it")
    lesson = find_lesson(lessons, args.lesson) if args.lesson else default_lesson(project, lessons)
    context = Context(project, lesson, lessons)
    checks = lesson_checks(context)
    if args.list:
        print("\n".join(f"{check.name:<20} {check.description}" for check in checks))
        return 0
    unknown = sorted(set(args.only or []) - {check.name for check in checks})
    if unknown:
        parser.error(f"no check {', '.join(unknown)} in {lesson.id}; --list shows them")
    if args.only:
        checks = with_dependencies(checks, args.only)

    count = f"{len(checks)} check" + ("" if len(checks) == 1 else "s")
    progress(f"checking {project} against {lesson.id} ({lesson.title}), {count}")
    clock, started = Clock(), time.monotonic()
    try:
        results = run_checks(checks, lambda name: _rerun(args, name), clock)
    finally:
        context.close()
    header = {
        "project": str(project),
        "lesson": lesson.id,
        "lesson_title": lesson.title,
        "lab": str(PROJECT_ROOT),
        "seconds": round(time.monotonic() - started, 1),
    }
    print(render_json(results, header) if args.json else render(results, header))
    return exit_code(results)


def _program() -> str:
    """The command as the student typed it: the script's path, or `python -m scripts.check`."""
    return f"python {sys.argv[0]}" if not __package__ else "python -m scripts.check"


def _rerun(args: argparse.Namespace, name: str) -> str:
    """The command line that runs one check alone."""
    words = [_program()]
    words += [args.project] if args.project != "." else []
    words += [f"--lesson {args.lesson}"] if args.lesson else []
    return " ".join([*words, f"--only {name}"])


if __name__ == "__main__":
    run(main)
