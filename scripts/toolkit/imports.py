"""Which of a project's Python files its entry points import, directly or not: read with `ast`, nothing is run.

A student's project must hold no file that is imported by nothing and run by nothing; this is how
`scripts.snapshots` tells which files of `scripts/` a student gets, and finds the ones nothing uses.
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
