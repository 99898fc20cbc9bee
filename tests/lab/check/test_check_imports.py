"""scripts.check needs nothing a student's project does not install: it runs with their virtual environment."""

import ast
import importlib.metadata
import re
import sys
import tomllib

from scripts.toolkit.check.student_project import SNAPSHOTS
from scripts.toolkit.cli import PROJECT_ROOT
from scripts.toolkit.lessons.student_files import reachable


def test_the_checker_needs_nothing_a_students_project_does_not_install():
    """Every library the checker's files import comes with the dependencies of the snapshot's pyproject.toml."""
    files = reachable(PROJECT_ROOT, {PROJECT_ROOT / "scripts" / "check.py"})
    imported = set()
    for file in files:
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    own = {"scripts", "ticket_api", "tests", "simulator", "locustfiles"}
    third_party = {name for name in imported - own if name not in sys.stdlib_module_names}
    pyproject = tomllib.loads((SNAPSHOTS / "end-of-m02" / "pyproject.toml").read_text())
    installed = _with_requirements({_name(r) for r in pyproject["project"]["dependencies"]})
    providers = importlib.metadata.packages_distributions()
    missing = {module for module in third_party if not {_name(d) for d in providers.get(module, [])} & installed}
    assert missing == set()


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _with_requirements(names: set[str]) -> set[str]:
    """The distributions and everything they require, as installed here (extras left out)."""
    found, waiting = set(), list(names)
    while waiting:
        name = waiting.pop()
        if name in found:
            continue
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:  # a requirement for other Pythons (a marker) only
            continue
        found.add(name)
        waiting += [_name(r) for r in requires if "extra ==" not in r]
    return found
