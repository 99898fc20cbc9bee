"""Which files of a project are the student's, and which of them its entry points import: read with `ast`, nothing
is run.

A student's project: the folders of WHOLE_FOLDERS whole, the suite's files in tests/ (not
tests/lab/), the files of FILES, and of scripts/ the scripts the lessons run and what they import.
Everything else is the lab's own. A student's project must hold no file that is imported by
nothing and run by nothing: `unused_files` finds them.
"""

import ast
from pathlib import Path

PACKAGES = ("ticket_api", "simulator", "scripts", "tests", "locustfiles")  # a project's own top-level packages


def imported_files(tree: Path, file: Path) -> set[Path]:
    """The project's own files that `file` imports (at any depth of its code), with their packages' __init__.py."""
    found: set[Path] = set()
    for node in ast.walk(ast.parse(file.read_text(), filename=str(file))):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from package import name`: the name may be a module of the package, or a name in it.
            modules = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for module in modules:
            if module.split(".")[0] in PACKAGES:
                found |= _files_of(tree, module)
    return found


def _files_of(tree: Path, module: str) -> set[Path]:
    """The file of `module` in `tree` (a module or a package), and the __init__.py of each package above it."""
    parts = module.split(".")
    files = {tree.joinpath(*parts[:depth], "__init__.py") for depth in range(1, len(parts) + 1)}
    files |= {tree.joinpath(*parts).with_suffix(".py"), tree.joinpath(*parts) / "__main__.py"}
    return {path for path in files if path.is_file()}


def reachable(tree: Path, entries: set[Path]) -> set[Path]:
    """The entry files and every file of the project they import, directly or through one another."""
    seen: set[Path] = set()
    waiting = [entry for entry in entries if entry.is_file()]
    while waiting:
        file = waiting.pop()
        if file not in seen:
            seen.add(file)
            waiting.extend(imported_files(tree, file) - seen)
    return seen


def is_command(file: Path) -> bool:
    """Whether the file runs as `python -m ...`: a __main__.py, or a module with an `if __name__ == "__main__":`."""
    return file.name == "__main__.py" or 'if __name__ == "__main__":' in file.read_text()


WHOLE_FOLDERS = ("ticket_api", "simulator", "locustfiles")
FILES = ("pyproject.toml", ".env.example", ".gitignore")
LESSON_SCRIPTS = ("scripts/db.py", "scripts/stall.py", "scripts/burst.py")
LAB_DOCS = {"ticket_api/README.md"}  # the lab's own notes on the API: measurements, reliability
NOT_THE_PROJECT = {"__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".lab", ".venv", ".env"}
OWN_README = "README.md"  # each snapshot has its own, written for the student's project at that point


def entry_points(tree: Path) -> set[Path]:
    """What a student's project runs: the app, the simulator's commands, the suite, Locust's file, lesson scripts."""
    entries = {tree / "ticket_api" / "main.py", tree / "tests" / "conftest.py", *map(tree.joinpath, LESSON_SCRIPTS)}
    entries |= {file for file in (tree / "simulator").rglob("*.py") if is_command(file)}
    entries |= set((tree / "tests").glob("test_*.py")) | set((tree / "locustfiles").glob("*.py"))
    return {entry for entry in entries if entry.is_file()}


def all_files(tree: Path) -> set[str]:
    """Every file under `tree` (relative, '/'-separated), but the tools' caches and a local database or venv."""
    return {
        file.relative_to(tree).as_posix()
        for file in tree.rglob("*")
        if file.is_file() and not NOT_THE_PROJECT & set(file.relative_to(tree).parts) and file.suffix != ".pyc"
    }


def student_files(tree: Path) -> set[str]:
    """Paths (relative, '/'-separated) of a project's student files: see WHOLE_FOLDERS, FILES and LESSON_SCRIPTS."""
    found = {name for name in (*FILES, OWN_README) if (tree / name).is_file()}
    for folder in WHOLE_FOLDERS:
        found |= {f"{folder}/{name}" for name in all_files(tree / folder)} - LAB_DOCS
    found |= {file.relative_to(tree).as_posix() for file in (tree / "tests").glob("*.py")}
    imported = reachable(tree, entry_points(tree))
    found |= {file.relative_to(tree).as_posix() for file in imported if file.is_relative_to(tree / "scripts")}
    return found


def unused_files(tree: Path) -> list[str]:
    """The student's Python files that nothing imports and nothing runs."""
    used = {file.relative_to(tree).as_posix() for file in reachable(tree, entry_points(tree))}
    return sorted(name for name in student_files(tree) if name.endswith(".py") and name not in used)
