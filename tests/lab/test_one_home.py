"""One home per idea: each idea's code lives in its module and nowhere else in scripts/; and the toolkit's folders are
its map: its __init__.py names every module at its top (all of them part of a student's project), scripts/README.md
names every folder (the lab's own), and each folder's __init__.py names every module in it.

The code is read with `ast`, docstrings left out: a module may say what another one does.
"""

import ast
import importlib
import re
from pathlib import Path
from typing import get_args

import pytest

import scripts.toolkit
from scripts.toolkit.cli import PROJECT_ROOT
from scripts.toolkit.lessons.student_files import student_files
from scripts.toolkit.running.stack import MODES
from ticket_api.config import Settings

SCRIPTS = PROJECT_ROOT / "scripts"
TOOLKIT = SCRIPTS / "toolkit"
REQUEST_CALLS = {"get", "post", "request", "fetch", "send"}  # what sends a request, as the tools call it


def code_of(path: Path) -> ast.Module:
    """The module's syntax tree without its docstrings."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                body.pop(0)
    return tree


def strings(tree: ast.AST) -> list[str]:
    """Every string constant of the code, f-strings' literal parts too."""
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def dotted_calls(tree: ast.AST) -> set[str]:
    """`a.b.c` of every call `a.b.c(...)` and `name` of every `name(...)`."""
    return {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}


def closed_loops(tree: ast.AST) -> list[int]:
    """Lines of a `while` loop in an async function that awaits a request and never pauses: a closed-loop user."""
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.AsyncFunctionDef):
            continue
        for loop in (node for node in ast.walk(function) if isinstance(node, ast.While)):
            awaited = {
                ast.unparse(node.value.func).rsplit(".", 1)[-1] for node in ast.walk(loop) if is_awaited_call(node)
            }
            if awaited & REQUEST_CALLS and not awaited & {"sleep", "wait_for", "wait"}:
                found.append(loop.lineno)
    return found


def is_awaited_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Await) and isinstance(node.value, ast.Call)


def health_requests(tree: ast.AST) -> list[int]:
    """Lines of a request to a path ending in /health (`client.get(f"{url}/health")`); a route's decorator is none."""
    routes = {
        id(inner) for node in ast.walk(tree) for d in getattr(node, "decorator_list", []) for inner in ast.walk(d)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and id(node) not in routes
        and ast.unparse(node.func).rsplit(".", 1)[-1] in REQUEST_CALLS | {"getter"}
        and any(text.endswith("/health") for argument in node.args for text in strings(argument))
    ]


def reads_postgres(tree: ast.AST) -> bool:
    """Whether the code holds a query that reads PostgreSQL's state: a SELECT, or the server's activity."""
    return any(text.lstrip().upper().startswith("SELECT") or "pg_stat_activity" in text for text in strings(tree))


def finds_a_command_by_name(tree: ast.AST) -> bool:
    """Whether a function walks the lessons' `.commands` and compares a command's `["name"]`."""
    for function in ast.walk(tree):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            code = ast.unparse(function)
            if ".commands" in code and "['name'] ==" in code:
                return True
    return False


# idea: (its home, what only the home may have in its code)
HOMES = {
    "the closed load loop": ("toolkit/load/closed_loop.py", lambda tree: bool(closed_loops(tree))),
    "the load's client": (
        "toolkit/load/closed_loop.py",
        lambda tree: bool({"aiohttp.ClientSession", "aiohttp.TCPConnector"} & dotted_calls(tree)),
    ),
    # The lesson's stall probe holds the prober: a snapshot can bring it to Module 2 only in the lesson's own files.
    "the /health prober": ("stall.py", lambda tree: bool(health_requests(tree))),
    "the process runner": (
        "toolkit/processes.py",
        lambda tree: bool(
            {"subprocess.Popen", "os.killpg", "os.kill", "uvicorn.Server", "uvicorn.run"} & dotted_calls(tree)
        ),
    ),
    "running a command to its end": (
        "toolkit/running/commands.py",
        lambda tree: any(
            call in ("subprocess.run", "subprocess.call", "subprocess.check_output") or call.endswith(".communicate")
            for call in dotted_calls(tree)
        ),
    ),
    "reading PostgreSQL's state": ("toolkit/measure/database_state.py", reads_postgres),
    "medians over passes": (
        "toolkit/measure/quantiles.py",
        lambda tree: "statistics.median" in dotted_calls(tree),
    ),
    "finding a lesson command by its name": ("toolkit/lessons/spec.py", finds_a_command_by_name),
    "the uvicorn command line": ("toolkit/running/apis.py", lambda tree: "uvicorn" in strings(tree)),
    "postmaster.pid": (
        "toolkit/running/postgres.py",
        lambda tree: any("postmaster.pid" in text for text in strings(tree)),
    ),
    "the quantile": (
        "toolkit/measure/quantiles.py",
        lambda tree: any(
            isinstance(n, ast.FunctionDef) and n.name in ("quantile", "percentile") for n in ast.walk(tree)
        ),
    ),
    "the /metrics parser": ("toolkit/metrics.py", lambda tree: "text_string_to_metric_families" in ast.unparse(tree)),
    "the course's figures": (
        "toolkit/reports/course_figures.py",
        lambda tree: any("course.toml" in text for text in strings(tree)),
    ),
}


# (idea, file): why it may, though not the idea's home
ALLOWED = {
    ("the /health prober", "scripts/toolkit/services.py"): "a service's readiness: one GET, untimed",
    ("the process runner", "scripts/toolkit/running/commands.py"): "a command in this terminal's own process group",
    ("reading PostgreSQL's state", "scripts/toolkit/databases.py"): "scripts.db status: its server's tables and users",
    ("medians over passes", "scripts/stall.py"): "the student's own script, its --passes",
    ("medians over passes", "scripts/burst.py"): "the student's own script, its p50 (it keeps its own quantile)",
    ("reading PostgreSQL's state", "scripts/reference_api.py"): "an app: a ticket's own queries, as the API's",
    ("reading PostgreSQL's state", "scripts/toolkit/running/busy.py"): "pgbench's load, a query it runs, not a reading",
}


@pytest.mark.parametrize("idea", HOMES)
def test_each_idea_lives_in_its_home_only(idea):
    home, found_in = HOMES[idea]
    files = [path.relative_to(PROJECT_ROOT).as_posix() for path in sorted(SCRIPTS.rglob("*.py"))]
    places = [name for name in files if (idea, name) not in ALLOWED and found_in(code_of(PROJECT_ROOT / name))]
    assert places == [f"scripts/{home}"], f"{idea}: {places}"


def test_the_toolkit_imports_no_command_but_the_lessons_stall_probe():
    for path in TOOLKIT.rglob("*.py"):
        for node in ast.walk(code_of(path)):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            modules += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for module in modules:
                assert (
                    module in ("scripts.stall", "scripts.toolkit")
                    or not module.startswith("scripts.")
                    or (module.startswith("scripts.toolkit."))
                ), (path, module)


def test_every_module_of_the_toolkit_is_imported_by_a_test():
    imported: set[str] = set()
    for path in (PROJECT_ROOT / "tests").rglob("*.py"):
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
        imported |= set(re.findall(r"scripts\.toolkit[\w.]*", text))  # a module imported in a child process
    modules = {
        ".".join(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
        for path in TOOLKIT.rglob("*.py")
        if path.stem != "__init__"
    }
    assert sorted(modules - imported) == []


def test_no_hand_written_http_client_or_server():
    for path in [*SCRIPTS.rglob("*.py"), *(PROJECT_ROOT / "simulator").rglob("*.py")]:
        calls = dotted_calls(code_of(path))
        assert not calls & {"asyncio.open_connection", "socket.create_connection", "loop.create_server"}, path
        assert not any(call.endswith(".create_server") for call in calls), path


def named_in(package) -> set[str]:
    """The names a package's docstring maps: the words before the colon of each `- a, b and c: ...` line."""
    named = set()
    for line in (package.__doc__ or "").splitlines():
        if line.startswith("- "):
            named |= set(named_in_line(line[2:].partition(":")[0]))
    return named


def named_in_line(names: str) -> list[str]:
    """The modules or folders one map line names before its colon: `a, b and c/`."""
    return [name.strip().rstrip("/") for name in re.split(r",| and ", names)]


def test_the_toolkits_folders_are_its_map_and_each_names_its_modules():
    folders = {path.name for path in TOOLKIT.iterdir() if (path / "__init__.py").is_file()}
    top = {path.stem for path in TOOLKIT.glob("*.py") if path.stem != "__init__"}
    assert named_in(scripts.toolkit) == top
    assert len(top) <= 8  # the rest lives in a folder named for its concern
    shipped = student_files(PROJECT_ROOT)
    assert {name for name in top if f"scripts/toolkit/{name}.py" not in shipped} == set()  # the lab's own: a folder
    assert {f"scripts/toolkit/{folder}/__init__.py" for folder in folders} & shipped == set()
    assert set(re.findall(r"^\| `(\w+)/` \|", (SCRIPTS / "README.md").read_text(), re.M)) == folders
    for folder in folders:
        package = importlib.import_module(f"scripts.toolkit.{folder}")
        modules = {path.stem for path in (TOOLKIT / folder).glob("*.py") if path.stem != "__init__"}
        assert named_in(package) == modules, folder


def test_each_name_a_map_gives_in_backticks_is_in_the_module_it_maps():
    folders = [TOOLKIT, *(path for path in TOOLKIT.iterdir() if (path / "__init__.py").is_file())]
    for folder in folders:
        modules: list[set[str]] = []
        for line in (ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or "").splitlines():
            if line.startswith("- "):
                names, _, line = line[2:].partition(":")
                modules = [top_level_names(folder / f"{name}.py") for name in named_in_line(names)]
            for name in re.findall(r"`(\w+)`", line):
                assert any(name in module for module in modules), (folder.name, name)


def top_level_names(path: Path) -> set[str]:
    """What a module defines or imports at its top (nothing for a folder); read, not imported (Locust patches)."""
    if not path.is_file():
        return set()
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return names


def test_the_checks_find_what_they_look_for():
    example = ast.parse(
        "async def user(client):\n    while True:\n        await client.post('/v1/tickets')\n"
        "async def prober(client):\n    while True:\n"
        "        await client.get('/health')\n        await asyncio.sleep(1)\n"
    )
    assert closed_loops(example) == [2]
    assert HOMES["the /health prober"][1](example)
    route = ast.parse("@router.get('/health')\nasync def health():\n    return {}\n")
    assert not HOMES["the /health prober"][1](route)
    elsewhere = {
        "running a command to its end": "result = subprocess.run(argv, capture_output=True)\n",
        "reading PostgreSQL's state": "conn.execute('select count(*) FROM pg_stat_activity')\n",
        "medians over passes": "figures = {name: statistics.median(values) for name, values in passes.items()}\n",
        "finding a lesson command by its name": (
            "def find(lessons, name):\n    return [c for l in lessons for c in l.commands if c['name'] == name]\n"
        ),
    }
    for idea, code in elsewhere.items():
        assert HOMES[idea][1](ast.parse(code)), idea


def test_the_tools_modes_are_the_apis_own():
    assert sorted(MODES) == sorted(get_args(Settings.model_fields["intake_mode"].annotation))
