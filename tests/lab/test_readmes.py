"""The READMEs hold together: every link and anchor resolves, and the settings table and .env.example are `Settings`."""

import ast
import re
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from scripts.toolkit import cli
from scripts.toolkit.lessons.settings_readme import END, START, env_example_problems, load_settings_class
from ticket_api.config import Settings

ROOT = cli.PROJECT_ROOT
READMES = sorted(p for p in ROOT.rglob("README.md") if not {".venv", ".lab", "node_modules"} & set(p.parts))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
ROW = re.compile(r"^\| `([A-Z0-9_]+)` \| `([^`]*)` \| (.+) \|$")


def outside_code(text: str) -> list[str]:
    """The lines of a Markdown text that are not inside a fenced code block."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a file's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = [line.lstrip("#").strip() for line in outside_code(path.read_text()) if re.match(r"#{1,6} ", line)]
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def table_rows(readme: Path) -> list[tuple[str, str, str]]:
    """The settings table between the README's markers: (variable, default, meaning) per row."""
    text = readme.read_text()
    assert text.count(START) == 1 and text.count(END) == 1, f"{readme}: one {START} and one {END}"
    table = text.split(START)[1].split(END)[0].strip().splitlines()
    assert table[:2] == ["| Variable | Default | Meaning |", "| --- | --- | --- |"]
    rows = [ROW.match(line) for line in table[2:]]
    assert all(rows), f"{readme}: a row that is not | `VARIABLE` | `default` | meaning |"
    return [row.groups() for row in rows]


def plain(value: object) -> object:
    """A setting's value, a secret's included, as comparable data."""
    return getattr(value, "get_secret_value", lambda: value)()


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_and_every_anchor_a_heading(readme):
    broken = []
    for line in outside_code(readme.read_text()):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            file, _, anchor = target.partition("#")
            path = (readme.parent / file).resolve() if file else readme
            if not path.exists():
                broken.append(f"{target}: no such file")
            elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
                broken.append(f"{target}: no such heading")
    assert not broken, f"{readme.relative_to(ROOT)}: {broken}"


def test_the_anchors_are_those_github_makes():
    assert {
        "scriptsstall-against-your-own-api",
        "8-which-task-runs-next-asyncios-loop-and-uvloop",
        "the-soak-python--m-scriptssoak",
    } <= anchors(ROOT / "scripts" / "README.md") | anchors(ROOT / "ticket_api" / "README.md")


@pytest.mark.parametrize(
    "project",
    [ROOT, ROOT / "snapshots" / "end-of-m01", ROOT / "snapshots" / "end-of-m02"],
    ids=["root", "end-of-m01", "end-of-m02"],
)
def test_the_readme_lists_every_setting_with_its_default_and_nothing_else(project):
    settings_class = load_settings_class(project)
    rows = table_rows(project / "README.md")
    assert [variable for variable, _, _ in rows] == [name.upper() for name in settings_class.model_fields]
    for (variable, shown, meaning), field in zip(rows, settings_class.model_fields.values(), strict=True):
        default = None if shown == "unset" else TypeAdapter(field.annotation).validate_python(shown)
        assert plain(default) == plain(field.default), f"{variable}: {shown}"
        assert meaning == field.description


def test_env_example_sets_every_setting_to_its_default_and_nothing_else():
    assert env_example_problems((ROOT / ".env.example").read_text(), Settings) == []


def test_env_example_problems_are_named():
    text = "# DATABASE_URL=postgresql://x\nDB_POOL=false\nNOT_A_SETTING=1\n# a comment = not a variable\n"
    problems = env_example_problems(text, Settings)
    assert "DB_POOL=false should be DB_POOL=true" in problems
    assert "NOT_A_SETTING is not a setting" in problems
    assert "INTAKE_MODE is missing" in problems
    assert not any("DATABASE_URL" in problem for problem in problems)
    assert "DATABASE_URL is unset by default: it should be a comment" in env_example_problems(
        "DATABASE_URL=x", Settings
    )


SOURCE_LINE = re.compile(r"(?P<file>[\w/]+\.py):(?P<line>\d+) in (?P<function>\w+)\(\): (?P<source>.+)$")


def project_of(readme: Path) -> Path:
    """The project a README speaks of: its snapshot's folder, or the root."""
    snapshots = ROOT / "snapshots"
    return snapshots / readme.relative_to(snapshots).parts[0] if snapshots in readme.parents else ROOT


def innermost_function(path: Path, line: int) -> str | None:
    """The name of the innermost function of `path` that holds `line`."""
    functions = [
        node
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno <= line <= (node.end_lineno or 0)
    ]
    return max(functions, key=lambda node: node.lineno).name if functions else None


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_sample_line_that_names_a_file_and_line_shows_that_line(readme):
    wrong = []
    for match in filter(None, (SOURCE_LINE.search(line) for line in readme.read_text().splitlines())):
        path, number = project_of(readme) / match["file"], int(match["line"])
        lines = path.read_text().splitlines() if path.exists() else []
        shown = lines[number - 1].strip() if 0 < number <= len(lines) else None
        if (shown, innermost_function(path, number) if shown else None) != (match["source"], match["function"]):
            wrong.append(f"{match['file']}:{number} is {shown!r}, not {match['source']!r} in {match['function']}()")
    assert not wrong, f"{readme.relative_to(ROOT)}: {wrong}"
