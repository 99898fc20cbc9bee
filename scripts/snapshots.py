"""Keep the lesson snapshots honest: `python -m scripts.snapshots sync | check` (maintainers only).

sync   copies the root's student files into the latest snapshot (and the unchanged ones into
       the earlier snapshot), writes snapshots/README.md from snapshots/lessons.toml, and the
       settings table of the root's and each snapshot's README from that project's `Settings`.
check  (a) the latest snapshot equals the root, the earlier one differs only where lessons say, and a snapshot
       holds no name that nothing in it uses and names no path or module it does not have;
       (b) each snapshot's suite prints its expected count; (c) each lesson's copy step replayed
       on its `before` state prints its count; (d) each lesson's commands, run against a live
       stack with a sped-up simulator, give results of the expected shape.
"""

import filecmp
import shutil
import tempfile
from pathlib import Path

from scripts.toolkit.cli import PROJECT_ROOT as ROOT
from scripts.toolkit.cli import CommandError, command_parser, progress, run
from scripts.toolkit.commands.options import add_speed
from scripts.toolkit.lessons.references import missing_references
from scripts.toolkit.lessons.settings_readme import load_settings_class, with_settings_table
from scripts.toolkit.lessons.snapshots_readme import render_readme
from scripts.toolkit.lessons.spec import (
    SNAPSHOTS,
    command_speed,
    load_lessons,
    once_more_on_a_timing_miss,
    run_command,
    shape_problems,
)
from scripts.toolkit.lessons.student_files import OWN_README, all_files, student_files, unused_files
from scripts.toolkit.lessons.suites import run_suite
from scripts.toolkit.lessons.unused_names import unused_names
from scripts.toolkit.running.stack import Stack, running_stack


def sync() -> list[str]:
    """Copy root → latest snapshot, unchanged files → earlier snapshots; write snapshots/README.md."""
    snapshots, lessons = load_lessons()
    latest = list(snapshots)[-1]
    changed = _mirror(ROOT, SNAPSHOTS / latest, keep={OWN_README})
    for lesson in lessons:
        if lesson.before in snapshots and lesson.before != latest:
            lesson_files = set(lesson.copy) | set(lesson.differs_from_source) | {OWN_README}
            changed += _mirror(ROOT, SNAPSHOTS / lesson.before, keep=lesson_files)
    generated = {SNAPSHOTS / "README.md": render_readme(snapshots, lessons), **_readmes_with_settings(snapshots)}
    for readme, text in generated.items():
        if not readme.exists() or readme.read_text() != text:
            readme.write_text(text)
            changed.append(readme.relative_to(ROOT).as_posix())
    return changed


def _readmes_with_settings(snapshots: dict) -> dict[Path, str]:
    """The root's and each snapshot's README, as they read with the table of their own project's `Settings`."""
    projects = [ROOT] + [SNAPSHOTS / name for name in snapshots]
    return {p / OWN_README: with_settings_table((p / OWN_README).read_text(), load_settings_class(p)) for p in projects}


def _mirror(source: Path, target: Path, keep: set[str]) -> list[str]:
    """Make `target` hold `source`'s student files, except the paths in `keep`, which it keeps as they are."""
    changed = []
    wanted = {f for f in student_files(source) if f not in keep}
    for relative in sorted(all_files(target) - wanted - keep):
        (target / relative).unlink()
        changed.append(f"deleted {target.name}/{relative}")
    for relative in sorted(wanted):
        destination = target / relative
        if not _same(source, target, relative):
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / relative, destination)
            changed.append(f"{target.name}/{relative}")
    return changed


def check_files() -> list[str]:
    """(a) The file-level promises; returns the problems found."""
    snapshots, lessons = load_lessons()
    latest = list(snapshots)[-1]
    problems = _differences(ROOT, SNAPSHOTS / latest, allowed={OWN_README}, label=f"root vs {latest}")
    for name in snapshots:
        stray = all_files(SNAPSHOTS / name) - student_files(SNAPSHOTS / name)
        problems += [f"{name} holds {relative}, which is not part of a student's project" for relative in sorted(stray)]
        problems += [f"{name}: nothing imports or runs {relative}" for relative in unused_files(SNAPSHOTS / name)]
        problems += [f"{name}: nothing uses {where}" for where in unused_names(SNAPSHOTS / name)]
        problems += [f"{name}: no such path or module: {where}" for where in missing_references(SNAPSHOTS / name)]
    problems += [f"root: nothing imports or runs the student file {relative}" for relative in unused_files(ROOT)]
    for lesson in lessons:
        if lesson.before in snapshots:
            source, before = SNAPSHOTS / lesson.source, SNAPSHOTS / lesson.before
            expected = set(lesson.copy) | set(lesson.differs_from_source)
            actual = {f for f in student_files(source) | student_files(before) if not _same(source, before, f)}
            if actual != expected:
                problems.append(
                    f"{lesson.before} and {lesson.source} differ in {sorted(actual ^ expected)} "
                    f"beyond what lesson {lesson.id} copies"
                )
    if (SNAPSHOTS / "README.md").read_text() != render_readme(snapshots, lessons):
        problems.append("snapshots/README.md is out of date: run `python -m scripts.snapshots sync`")
    problems += [
        f"the settings table of {readme.relative_to(ROOT)} is out of date: run `python -m scripts.snapshots sync`"
        for readme, text in _readmes_with_settings(snapshots).items()
        if readme.read_text() != text
    ]
    return problems


def _differences(a: Path, b: Path, allowed: set[str], label: str) -> list[str]:
    files = (student_files(a) | student_files(b)) - allowed
    return [f"{label}: {f} differs" for f in sorted(files) if not _same(a, b, f)]


def _same(a: Path, b: Path, relative: str) -> bool:
    first, second = a / relative, b / relative
    return first.exists() == second.exists() and (not first.exists() or filecmp.cmp(first, second, shallow=False))


def copy_tree(snapshot: Path, into: Path) -> Path:
    """A copy of a snapshot's project in `into`, without caches."""
    return shutil.copytree(snapshot, into, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".lab"))


def suite_problem(label: str, project: Path, expected: int, database_url: str) -> str | None:
    """Run the project's suite: None when its summary is exactly `N passed`, else what is wrong."""
    suite = run_suite(project, {"DATABASE_URL": database_url})
    if suite.passed_exactly(expected):
        return None
    return f"{label}: expected '{expected} passed', got '{suite.summary}'"


def check_suites_and_lessons(workdir: Path, speed: float) -> list[str]:
    """(b), (c) and (d); returns the problems found."""
    snapshots, lessons = load_lessons()
    problems = []
    with running_stack(speed) as stack:  # the lesson commands need the known customers: the small data set
        for name, snapshot in snapshots.items():
            progress(f"(b) {name}: running its suite")
            project = copy_tree(SNAPSHOTS / name, workdir / name)
            problems.append(suite_problem(name, project, snapshot["tests"], stack.dsn))
        states = {name: workdir / name for name in snapshots}
        for lesson in lessons:
            progress(f"(c) {lesson.id}: copying {len(lesson.copy)} files onto {lesson.before}")
            project = copy_tree(states[lesson.before], workdir / lesson.id)
            for relative in lesson.copy:
                (project / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(SNAPSHOTS / lesson.source / relative, project / relative)
            states[lesson.id] = project
            problems += _differences(
                project,
                SNAPSHOTS / lesson.source,
                allowed=set(lesson.differs_from_source),
                label=f"{lesson.id} replayed vs {lesson.source}",
            )
            problems.append(suite_problem(f"{lesson.id} replayed", project, lesson.tests, stack.dsn))
            for command in lesson.commands:
                progress(f"(d) {lesson.id}: {command['name']}")
                problems += command_problems(stack, project, command)
    return [p for p in problems if p]


def command_problems(stack: Stack, project: Path, command: dict) -> list[str]:
    """Run one lesson command against `project`'s simulator and API; compare its --json with `expect`.

    A command's own `speed` in lessons.toml wins over the check's. A run that misses only a timing bound runs once
    more, as scripts.check's timing checks do: a busy machine slows the tickets, it never fails one.
    """
    speed = command_speed(command, stack.speed)
    statuses = {key: bound for key, bound in command["expect"].items() if key == "statuses"}

    def attempt(_: int) -> dict:
        with stack.api(env=command.get("api_env", {}), speed=speed, project=project) as api:
            return run_command(command, api.url, speed, cwd=project)

    def problems(figures: dict) -> list[str]:
        return shape_problems(figures, command["expect"], speed)

    def timing_miss(figures: dict) -> bool:
        return bool(problems(figures)) and not shape_problems(figures, statuses, speed)  # every ticket answered

    def say(figures: dict) -> None:
        progress(f"    {command['name']}: {'; '.join(problems(figures))}; running it once more")

    try:
        figures, _ = once_more_on_a_timing_miss(attempt, timing_miss, say)
    except CommandError as exc:
        return [f"{command['name']}: {exc}"]
    return [f"{command['name']}: {problem}" for problem in problems(figures)]


def main() -> int:
    """Parse the command line and run sync or check."""
    parser = command_parser("python -m scripts.snapshots", __doc__)
    parser.add_argument("command", choices=["sync", "check"])
    parser.add_argument("--files-only", action="store_true", help="check: only (a), the file-level promises")
    add_speed(parser, 0.2, " of check's lesson commands")
    args = parser.parse_args()
    if args.command == "sync":
        changed = sync()
        print("\n".join(changed) if changed else "snapshots are in sync")
        return 0
    problems = check_files()
    if not args.files_only:
        with tempfile.TemporaryDirectory(prefix="lab-snapshots-") as workdir:
            problems += check_suites_and_lessons(Path(workdir), args.speed)
    for problem in problems:
        print(f"FAIL {problem}")
    print("snapshots: all promises hold" if not problems else f"snapshots: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    run(main)
