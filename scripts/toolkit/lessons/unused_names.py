"""The functions, classes, methods and constants a project defines that nothing in it uses: read with `ast`.

A module's top-level name is used when its own module loads it, another module imports it by name or reads it
from the module (`services.api`), or a string names it (uvicorn's `ticket_api.main:app`). A method is used when
any code reads an attribute of its name. Names a framework finds by itself are not counted: a route, validator or
fixture that its decorator registers, a fixture taken as a parameter, a test, a dunder, a module's `pytestmark`,
a Locust user class and its hooks.
"""

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from scripts.toolkit.lessons.student_files import PACKAGES, all_files

FOUND_BY_FRAMEWORKS = {"pytestmark"}
PLAIN_DECORATORS = {"property", "staticmethod", "classmethod", "contextmanager", "asynccontextmanager", "cache"}


@dataclass(frozen=True)
class Definition:
    """A name a module defines at its top level, or a method of one of its classes."""

    file: str  # relative, '/'-separated
    line: int
    name: str
    module: str  # the module's dotted name
    top_level: bool
    fixture: bool = False  # a pytest fixture: asked for by its name, from any module


def unused_names(tree: Path) -> list[str]:
    """`file:line: name` for each definition of the project's Python files that nothing in the project uses."""
    modules = {
        file: ast.parse((tree / file).read_text(), filename=file)
        for file in sorted(all_files(tree))
        if file.endswith(".py")
    }
    used = set().union(*(_uses(_dotted(file), module) for file, module in modules.items()))
    return [
        f"{definition.file}:{definition.line}: {definition.name}"
        for file, module in modules.items()
        for definition in _definitions(file, module)
        if ((definition.module if definition.top_level and not definition.fixture else "", definition.name) not in used)
    ]


def _dotted(file: str) -> str:
    return file.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _definitions(file: str, module: ast.Module) -> Iterator[Definition]:
    for node in module.body:
        for name, defined in _top_level_names(node):
            if not _found_by_a_framework(name, defined, file):
                fixture = "fixture" in _decorators(defined)
                yield Definition(file, defined.lineno, name, _dotted(file), top_level=True, fixture=fixture)
        if isinstance(node, ast.ClassDef) and not _locust_user(node):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    if not _found_by_a_framework(item.name, item, file):
                        yield Definition(file, item.lineno, item.name, _dotted(file), top_level=False)


def _top_level_names(node: ast.stmt) -> Iterator[tuple[str, ast.stmt]]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name, node
    elif isinstance(node, ast.Assign):
        yield from ((target.id, node) for target in node.targets if isinstance(target, ast.Name))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        yield node.target.id, node


def _found_by_a_framework(name: str, node: ast.AST, file: str) -> bool:
    if name.startswith("__") or name in FOUND_BY_FRAMEWORKS:
        return True
    if name.startswith("test_") and Path(file).name.startswith("test_"):
        return True
    if isinstance(node, ast.ClassDef) and _locust_user(node):
        return True
    # A decorator that only wraps its function registers it nowhere; pytest's fixture is asked for by its name.
    return any(decorator not in PLAIN_DECORATORS and decorator != "fixture" for decorator in _decorators(node))


def _locust_user(node: ast.ClassDef) -> bool:
    """A Locust user class: Locust runs every one of its file, and calls its hooks (`on_start`) by name."""
    return any(ast.unparse(base).endswith("User") for base in node.bases)


def _decorators(node: ast.AST) -> list[str]:
    """The last dotted name of each of the node's decorators: `fixture` for `@pytest.fixture`."""
    return [ast.unparse(decorator).split(".")[-1] for decorator in getattr(node, "decorator_list", [])]


def _uses(dotted: str, module: ast.Module) -> set[tuple[str, str]]:
    """What one module uses: (module, name) for a top-level name, ("", name) for any attribute (a method)."""
    used: set[tuple[str, str]] = set()
    modules: dict[str, str] = {}  # a local name bound to a project module -> the module
    docstrings = {id(node.value) for node in ast.walk(module) if isinstance(node, ast.Expr) and _is_text(node.value)}
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            for alias in node.names:
                used.add((node.module, alias.name))
                modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            modules |= {alias.asname or alias.name: alias.name for alias in node.names if alias.asname}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            used |= {(dotted, node.id), ("", node.id)}
        elif isinstance(node, ast.Attribute):
            used.add(("", node.attr))
            if isinstance(node.value, ast.Name) and node.value.id in modules:
                used.add((modules[node.value.id], node.attr))
        elif isinstance(node, ast.arg | ast.keyword) and node.arg:
            used.add(("", node.arg))  # a fixture asked for by name, a keyword
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            target, _, name = node.value.partition(":")  # uvicorn's `module:app`, or a fixture's name
            used.add((target, name) if name.isidentifier() else ("", target))
    return used


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)
