"""One home per idea: each idea's code lives in its module and nowhere else in scripts/; and the toolkit's folders are
its map: its __init__.py names every module at its top (all of them part of a student's project), scripts/README.md
names every folder (the lab's own), and each folder's __init__.py names every module in it.

The code is read with `ast`, docstrings left out: a module may say what another one does.
"""

import ast
import importlib
import re
import textwrap
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


def finds_a_lesson_by_its_id(tree: ast.AST) -> bool:
    """Whether a function of lessons compares a lesson's `.id`, or keys a dict by it."""
    for function in ast.walk(tree):
        if not (isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) and "lesson" in ast.unparse(function)):
            continue
        for node in ast.walk(function):
            sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
            if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Eq) and any(is_id(side) for side in sides):
                return True
            if isinstance(node, ast.DictComp) and is_id(node.key):
                return True
    return False


def is_id(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "id"


def runs_a_second_time(tree: ast.AST) -> bool:
    """Whether the code loops over the attempts 1 and 2, or makes an attempt numbered 2."""
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and "attempt" in ast.unparse(node.target):
            if ast.unparse(node.iter) in ("(1, 2)", "[1, 2]", "range(2)", "range(1, 3)"):
                return True
        if isinstance(node, ast.Call) and "attempt" in ast.unparse(node.func).lower():
            if any(isinstance(argument, ast.Constant) and argument.value == 2 for argument in node.args):
                return True
    return False


def builds_a_provider_url(tree: ast.AST) -> bool:
    """Whether the code makes a PROVIDER_URL of an address: `f"{simulator.url}/v1"` or `... + "/v1"`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and len(node.values) > 1 and texts_of(node.values[-1]) == ["/v1"]:
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and texts_of(node.right) == ["/v1"]:
            return True
    return False


SLEEPS = {"time.sleep", "asyncio.sleep"}


def medians_figure_by_figure(tree: ast.AST) -> bool:
    """Whether a loop or comprehension takes a median at each step: a median of each figure over runs (one series'
    median is statistics.median's own)."""
    return any(
        "statistics.median" in dotted_calls(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.For | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp)
    )


def polls_while_a_run_goes_on(tree: ast.AST) -> bool:
    """Whether a loop waits on an event (`while not stop.is_set()`, `while not done.wait(0.05)`) or sleeps between
    its steps, with no deadline to give up at: a wait for something to be ready has one, a poll runs until told."""
    for loop in ast.walk(tree):
        if not isinstance(loop, ast.While | ast.For):
            continue
        test = ast.unparse(loop.test) if isinstance(loop, ast.While) else ""
        calls = [node for part in loop.body for node in ast.walk(part) if isinstance(node, ast.Call)]
        pauses = {ast.unparse(call.func) for call in calls} & SLEEPS or [
            call for call in calls if ast.unparse(call.func) == "asyncio.wait_for" and ".wait()" in ast.unparse(call)
        ]
        names = {node.id for node in ast.walk(loop) if isinstance(node, ast.Name)}
        if (".is_set()" in test or ".wait(" in test or pauses) and not any(
            word in name for name in names for word in ("deadline", "give_up")
        ):
            return True
    return False


# Reading another's text: looking, with a regular expression or with startswith, endswith, removeprefix,
# removesuffix or `in`, for words another module of the lab writes, or for anything in what a process wrote.
TEXT_METHODS = {"startswith", "endswith", "removeprefix", "removesuffix"}
REGEX_CALLS = {f"re.{name}" for name in ("compile", "search", "match", "fullmatch", "findall", "finditer", "sub")}
REGEX_METHODS = {"search", "match", "fullmatch", "findall", "finditer", "sub"}  # a compiled pattern's
MESSAGE = re.compile(r"[A-Za-z]{2,}:? \S|^[A-Z]{3,}(?![a-z])")  # words of a sentence, or a word in capitals (FAIL)
PROCESS_OUTPUT = {"stdout", "stderr"}  # what a process wrote, as subprocess gives it
OUTPUT_PARAMETERS = {"output", "log_text"}  # what a process wrote, handed to a function


def texts_of(node: ast.AST | None) -> list[str]:
    """The literal text of a string, of a tuple of strings, or of an f-string's literal parts."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    parts = node.elts if isinstance(node, ast.Tuple) else node.values if isinstance(node, ast.JoinedStr) else []
    return [text for part in parts for text in texts_of(part)]


def regex_words(patterns: list[str]) -> list[str]:
    """The plain text between regular expressions' syntax: `blocked for (\\d+) ms` gives `blocked for ` and ` ms`."""
    runs = [run for pattern in patterns for run in re.split(r"\\.|[\[\](){}?*+|^$]", pattern)]
    return [run for run in runs if re.search("[A-Za-z]", run)]


Match = tuple[ast.expr, list[str], str | None]  # the node, the texts it looks for, the module's constant they are


def text_matches(tree: ast.Module) -> list[Match]:
    """Each text match in the module: a regular expression's, startswith's and the like's, `in`'s."""
    constants: dict[str, tuple[bool, list[str]]] = {}  # at the module's top: name -> (compiled?, its texts)
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            value = statement.value
            compiled = isinstance(value, ast.Call) and ast.unparse(value.func) == "re.compile" and bool(value.args)
            pattern = value.args[0] if isinstance(value, ast.Call) and compiled else value
            for target in statement.targets if isinstance(statement, ast.Assign) else [statement.target]:
                if isinstance(target, ast.Name):
                    constants[target.id] = (compiled, texts_of(pattern))
    found: list[Match] = []
    for node in ast.walk(tree):
        looked_for, callee = None, ast.unparse(node.func) if isinstance(node, ast.Call) else ""
        if (
            isinstance(node, ast.Call)
            and node.args
            and (callee in REGEX_CALLS or callee.split(".")[-1] in TEXT_METHODS)
        ):
            looked_for = node.args[0]
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            looked_for = node.left
        parts = [node.func, *node.args] if isinstance(node, ast.Call) else []  # `map(BLOCKED.search, lines)` too
        for part in parts:
            if isinstance(part, ast.Attribute) and part.attr in REGEX_METHODS and isinstance(part.value, ast.Name):
                if isinstance(node, ast.Call) and constants.get(part.value.id, (False, []))[0]:
                    found.append((node, regex_words(constants[part.value.id][1]), part.value.id))
        if isinstance(node, ast.Call | ast.Compare) and looked_for is not None:
            constant = looked_for.id if isinstance(looked_for, ast.Name) and looked_for.id in constants else None
            texts = constants[constant][1] if constant else texts_of(looked_for)
            found.append((node, regex_words(texts) if callee in REGEX_CALLS else texts, constant))
    return found


def written_elsewhere(tree: ast.Module, name: str, matches: list[Match]) -> bool:
    """Whether the module uses its constant `name` otherwise than to look for it: it writes that text itself."""
    in_matches = {id(node) for match, _, _ in matches for node in ast.walk(match)}
    return any(
        isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id == name and id(node) not in in_matches
        for node in ast.walk(tree)
    )


def output_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names of a function that hold what a process wrote, or lines of it (parsed JSON is values, not text)."""
    held = {argument.arg for argument in function.args.args if argument.arg in OUTPUT_PARAMETERS}
    while True:
        more = set()
        for node in ast.walk(function):
            pairs = [(target, node.value) for target in node.targets] if isinstance(node, ast.Assign) else []
            pairs += [(node.target, node.iter)] if isinstance(node, ast.comprehension | ast.For) else []
            for target, value in pairs:
                if holds_output(value, held):
                    more |= {name.id for name in ast.walk(target) if isinstance(name, ast.Name)} - held
        if not more:
            return held
        held |= more


def holds_output(node: ast.AST, held: set[str]) -> bool:
    """Whether an expression is (made of) what a process wrote: `.stdout`, `.stderr`, or a name that holds it."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) in ("json.loads", "json.load"):
        return False
    return any(
        (isinstance(part, ast.Attribute) and part.attr in PROCESS_OUTPUT)
        or (isinstance(part, ast.Name) and part.id in held)
        for part in ast.walk(node)
    )


def reads_anothers_text(tree: ast.Module, others: set[str]) -> list[int]:
    """Lines that look for words another module writes (`others`: the strings of the other modules), or look for
    anything, but the module's own marks, in what a process wrote."""
    matches = text_matches(tree)
    lines = {
        node.lineno
        for node, texts, _ in matches
        for text in texts
        if MESSAGE.search(text) and len(text.strip()) >= 4 and any(text.strip() in other for other in others)
    }
    for function in (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)):
        held, inside = output_names(function), {id(node) for node in ast.walk(function)}
        for node, texts, constant in matches:
            if id(node) in inside and texts and holds_output(node, held):
                if constant is None or not written_elsewhere(tree, constant, matches):
                    lines.add(node.lineno)
    return sorted(lines)


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
    # The lesson's scripts/stall.py holds the median over passes and the polling: its --passes and scripts.burst use
    # them, and a snapshot holds only what it uses.
    "medians over passes": ("stall.py", medians_figure_by_figure),
    "polling while a run goes on": ("stall.py", polls_while_a_run_goes_on),
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
    "a process tree's CPU time": (
        "toolkit/measure/cpu.py",
        lambda tree: any(
            call.rsplit(".", 1)[-1] in ("getrusage", "process_time", "cpu_times") or call == "os.times"
            for call in dotted_calls(tree)
        ),
    ),
    "finding a lesson by its id": ("toolkit/lessons/spec.py", finds_a_lesson_by_its_id),
    "running again on a timing miss": ("toolkit/lessons/spec.py", runs_a_second_time),
    "a simulator's PROVIDER_URL": ("toolkit/running/stack.py", builds_a_provider_url),
    "starting the lab's stack: a simulator": (
        "toolkit/running/stack.py",
        lambda tree: bool({"simulator", "services.simulator"} & dotted_calls(tree)),
    ),
    "starting PostgreSQL": (
        "toolkit/databases.py",
        lambda tree: any(call.rsplit(".", 1)[-1] in ("resolve_dsn", "embedded_dsn") for call in dotted_calls(tree)),
    ),
}


# (idea, file): why it may, though not the idea's home
ALLOWED = {
    ("the /health prober", "scripts/toolkit/services.py"): "a service's readiness: one GET, untimed",
    ("the process runner", "scripts/toolkit/running/commands.py"): "a command in this terminal's own process group",
    ("reading PostgreSQL's state", "scripts/toolkit/databases.py"): "scripts.db status: its server's tables and users",
    ("reading PostgreSQL's state", "scripts/reference_api.py"): "an app: a ticket's own queries, as the API's",
    ("reading PostgreSQL's state", "scripts/toolkit/running/busy.py"): "pgbench's load, a query it runs, not a reading",
    ("a process tree's CPU time", "scripts/toolkit/check/loop_sampler.py"): "inside a project's API, stdlib only",
    ("polling while a run goes on", "scripts/toolkit/check/loop_sampler.py"): "inside a project's API, stdlib only",
    ("starting the lab's stack: a simulator", "scripts/simulator_bench.py"): "the simulator is what it measures",
    ("starting PostgreSQL", "scripts/reference_api.py"): "an app: it reaches its database as the API does",
    ("starting PostgreSQL", "scripts/toolkit/running/postgres.py"): "a crashed server started again (scripts.soak)",
}
# file: why it may look for words another module writes
READS_ANOTHERS_TEXT = {
    "scripts/toolkit/check/lesson_checks.py": "the request log's line is the lesson's promise (lessons.toml's `log`)",
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
    for old in ("resource.getrusage(resource.RUSAGE_CHILDREN)", "time.process_time()", "worker.cpu_times()"):
        assert HOMES["a process tree's CPU time"][1](ast.parse(old)), old


def test_the_tools_modes_are_the_apis_own():
    assert sorted(MODES) == sorted(get_args(Settings.model_fields["intake_mode"].annotation))


def test_no_module_looks_for_words_another_writes_or_in_what_a_process_wrote():
    files = [
        *SCRIPTS.rglob("*.py"),
        *(PROJECT_ROOT / "ticket_api").rglob("*.py"),
        *(PROJECT_ROOT / "simulator").rglob("*.py"),
    ]
    written = {path: set(strings(code_of(path))) for path in files}
    found = {}
    for path in sorted(SCRIPTS.rglob("*.py")):
        others = set().union(*(texts for other, texts in written.items() if other != path))
        name = path.relative_to(PROJECT_ROOT).as_posix()
        if name not in READS_ANOTHERS_TEXT and (lines := reads_anothers_text(code_of(path), others)):
            found[name] = lines
    assert found == {}


def test_the_new_homes_checks_find_the_old_forms():
    old = {
        "finding a lesson by its id": [
            "def lesson(lessons, wanted):\n    return next(item for item in lessons if item.id == wanted)\n",
            "def chain(lessons):\n    by_id = {lesson.id: lesson for lesson in lessons}\n",
        ],
        "running again on a timing miss": [
            "for attempt in (1, 2):\n    figures = run(attempt)\n",
            "result = _attempt(check, 1)\nif failed(result):\n    result = _attempt(check, 2)\n",
        ],
        "a simulator's PROVIDER_URL": ['api(f"{simulator.url}/v1")\n', 'api(simulator.url + "/v1")\n'],
        "starting the lab's stack: a simulator": ["with services.simulator(speed=0.2) as simulator:\n    pass\n"],
        "starting PostgreSQL": ["dsn = resolve_dsn(load_settings())\n", "dsn = embedded_dsn(pgdata)\n"],
        "polling while a run goes on": [
            "async def watch():\n    while not done.is_set():\n        await asyncio.sleep(interval)\n",
            "def sample():\n    while not stop.wait(SAMPLE_EVERY_S):\n        read()\n",
            "def read_at(moments):\n    for moment in moments:\n        time.sleep(moment - time.perf_counter())\n",
            "async def run(self):\n    while True:\n        probe()\n        await asyncio.sleep(self.every_s)\n",
            "async def run(stop):\n    while True:\n        await asyncio.wait_for(stop.wait(), 0.5)\n",
        ],
    }
    for idea, forms in old.items():
        assert all(HOMES[idea][1](ast.parse(code)) for code in forms), idea
    ready = "while not server.started:\n    if time.monotonic() > deadline:\n        raise Late\n    time.sleep(0.01)\n"
    assert not polls_while_a_run_goes_on(ast.parse(ready))  # a wait for something to be ready: another idea
    assert not finds_a_lesson_by_its_id(ast.parse("def cpu(process):\n    return [t for t in threads if t.id == 1]\n"))


def test_looking_for_anothers_words_is_found_in_each_of_its_old_forms():
    def found(code: str, others: tuple[str, ...] = ()) -> list[int]:
        return reads_anothers_text(ast.parse(textwrap.dedent(code)), set(others))

    watchdog = "event loop blocked for %.0f ms so far, at %s"  # what another module writes
    assert found('BLOCKED = re.compile(r"event loop blocked for (\\d+) ms so far")\n', (watchdog,)) == [1]
    assert found('reason = reason.removeprefix("could not run: ")\n', ("could not run: ",)) == [1]
    assert found('failed = any(v.startswith("FAIL") for v in verdicts)\n', ("FAIL", " {name}")) == [1]
    assert found('lines = [line for line in log if "POST /v1/tickets" in line]\n', ("POST /v1/tickets",)) == [1]
    over_output = """\
        COUNT = re.compile(r"(\\d+) (passed|failed)")
        EXCEPTION = re.compile(r"^(\\w+Error): (.*)$")

        def summary(result):
            lines = [line for line in result.stdout.splitlines() if line.strip()]
            return COUNT.findall(lines[-1])

        def why(log_text):
            lines = log_text.splitlines()
            names = [match for match in map(EXCEPTION.match, lines) if match]
            return [line for line in lines if line.startswith("ERROR:") and "Traceback" not in line]
        """
    assert found(over_output) == [6, 10, 11]
    own_mark_and_values = """\
        MARK = "WRK_FIGURES "
        SCRIPT = {"mark": MARK}

        def figures(result, args):
            line = next(line for line in result.stdout.splitlines() if line.startswith(MARK))
            answer = json.loads(result.stdout)
            return "invalid" in answer or "cpu" in args.parts or key.startswith("worker ")
        """
    assert found(own_mark_and_values, ("[worker ",)) == []
