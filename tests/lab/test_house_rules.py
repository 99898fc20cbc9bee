"""The tools' house rules, read with `ast`: shared options declared once, small functions, drawing in reports/ only,
one verb for a result as text, and a name defined in two modules of scripts/ means the same thing in both."""

import ast

from scripts.toolkit.cli import PROJECT_ROOT

SCRIPTS = PROJECT_ROOT / "scripts"
SHARED_OPTIONS = ("--json", "--out", "--speed", "--loop", "--duration", "--passes", "--workers", "--no-held")
OPTIONS_HOME = "scripts/toolkit/commands/options.py"
# The student's own scripts declare their options themselves: a snapshot holds none of the lab's folders.
STUDENTS_OWN = ("scripts/stall.py", "scripts/burst.py", "scripts/db.py")
LONGEST = 60  # lines of a function, its docstring and decorators included
DRAWING_CALLS = {"subplots", "plot", "bar", "barh", "scatter", "savefig"}  # matplotlib's, on a figure or axes
TEXT_VERB = "render"  # a result as text
# Names defined in several modules, each time with the one meaning given (read by people: a new module that defines
# one of them with another meaning is for its review to catch; a new name twice fails here).
SAME_MEANING = {
    "main": "a command's entry point",
    "render": "a result as the text a command prints",
    "create_app": "an ASGI app for uvicorn's --factory",
    "health": "the route GET /health",
    "median_rows": "a command's rows: each row's figures as medians over its passes",
    "write_files": "a command's files (JSON, CSV, charts) in its --out folder, their names returned",
}


def modules() -> dict[str, ast.Module]:
    return {path.relative_to(PROJECT_ROOT).as_posix(): ast.parse(path.read_text()) for path in SCRIPTS.rglob("*.py")}


def functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


def long_functions(tree: ast.AST) -> list[str]:
    """The functions longer than LONGEST lines, with their length."""
    found = []
    for function in functions(tree):
        start = min([function.lineno, *(decorator.lineno for decorator in function.decorator_list)])
        assert function.end_lineno is not None
        if function.end_lineno - start + 1 > LONGEST:
            found.append(f"{function.name}: {function.end_lineno - start + 1} lines")
    return found


def draws(tree: ast.AST) -> bool:
    """Whether the module imports matplotlib, or draws with a figure or axes it was handed."""
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    called = {ast.unparse(node.func).rsplit(".", 1)[-1] for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return any(name.split(".")[0] == "matplotlib" for name in imported) or bool(called & DRAWING_CALLS)


def other_text_verbs(tree: ast.AST) -> list[str]:
    """Functions whose name says they turn a result into text with another verb than render."""
    return [f.name for f in functions(tree) if f.name in ("report", "format_report", "as_text", "to_text")]


def defined_at_top(tree: ast.Module) -> set[str]:
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}


def declared_options(tree: ast.AST) -> set[str]:
    """The shared options the module declares: `parser.add_argument("--json", ...)`."""
    return {
        argument.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("add_argument")
        for argument in node.args  # a second spelling too: add_argument("--api-workers", "--workers")
        if isinstance(argument, ast.Constant) and argument.value in SHARED_OPTIONS
    }


def test_shared_options_are_declared_once():
    found = {name: options for name, tree in modules().items() if (options := declared_options(tree))}
    assert set(found.pop(OPTIONS_HOME)) == set(SHARED_OPTIONS)
    assert {name: options for name, options in found.items() if name not in STUDENTS_OWN} == {}
    assert declared_options(ast.parse('parser.add_argument("--workers", type=int, help="Locust workers")\n'))
    assert declared_options(ast.parse('parser.add_argument("--api-workers", "--workers", type=int)\n'))


def test_argparse_types_live_with_the_options():
    typing = {name for name, tree in modules().items() if "argparse.ArgumentTypeError" in ast.unparse(tree)}
    assert typing == {OPTIONS_HOME, "scripts/stall.py"}  # stall.py: the student's own, which the lab's reuse


def test_no_function_in_scripts_is_over_60_lines():
    found = {name: long for name, tree in modules().items() if (long := long_functions(tree))}
    assert found == {}


def test_drawing_happens_only_in_reports():
    drawing = {name for name, tree in modules().items() if draws(tree)}
    assert drawing and all(name.startswith("scripts/toolkit/reports/") for name in drawing), drawing


def test_one_verb_turns_a_result_into_text():
    found = {name: verbs for name, tree in modules().items() if (verbs := other_text_verbs(tree))}
    assert found == {}
    assert sum(TEXT_VERB in defined_at_top(tree) for tree in modules().values()) >= 5


def test_no_name_is_defined_in_two_modules_with_two_meanings():
    where: dict[str, list[str]] = {}
    for name, tree in modules().items():
        for defined in defined_at_top(tree):
            where.setdefault(defined, []).append(name)
    twice = {defined: sorted(places) for defined, places in where.items() if len(places) > 1}
    assert {defined: places for defined, places in twice.items() if defined not in SAME_MEANING} == {}


def test_the_rules_find_what_they_look_for():
    long = "def draw_held(rows):\n" + "    x = 1\n" * 60
    assert long_functions(ast.parse(long)) == ["draw_held: 61 lines"]
    assert draws(ast.parse("import matplotlib.pyplot as plt\n"))
    assert draws(ast.parse("from matplotlib import pyplot\n"))
    assert draws(ast.parse("figure, axes = charts.load_pyplot().subplots(1, 2)\nfigure.savefig(path)\n"))
    assert other_text_verbs(ast.parse("def report(results):\n    return ''\n")) == ["report"]
    assert defined_at_top(ast.parse("def summarize(r):\n    pass\nclass Run:\n    pass\n")) == {"summarize", "Run"}


def test_a_name_allowed_twice_is_still_defined_twice():
    where: dict[str, int] = {}
    for tree in modules().values():
        for defined in defined_at_top(tree):
            where[defined] = where.get(defined, 0) + 1
    assert {name for name in SAME_MEANING if where.get(name, 0) < 2} == set()
