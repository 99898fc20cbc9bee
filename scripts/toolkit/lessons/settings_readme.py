"""The settings table of a README, written from a project's `Settings` (its ticket_api/config.py), and .env.example
held to it.

Each setting's `Field(description=...)` is its "Meaning"; the table goes between START and END.
"""

import importlib.util
from pathlib import Path

from pydantic_settings import BaseSettings

from scripts.toolkit.settings_table import shown_default

START = "<!-- settings:start -->"
END = "<!-- settings:end -->"


def load_settings_class(project: Path) -> type[BaseSettings]:
    """The `Settings` class of a project (the lab itself or a snapshot), read from its own config.py."""
    path = project / "ticket_api" / "config.py"
    spec = importlib.util.spec_from_file_location(f"settings_of_{project.name.replace('-', '_')}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Settings


def settings_table(settings_class: type[BaseSettings]) -> str:
    """`| Variable | Default | Meaning |`, one row per setting, in the class's order."""
    rows = ["| Variable | Default | Meaning |", "| --- | --- | --- |"]
    for name, field in settings_class.model_fields.items():
        rows.append(f"| `{name.upper()}` | `{shown_default(field.default)}` | {field.description} |")
    return "\n".join(rows)


def with_settings_table(readme: str, settings_class: type[BaseSettings]) -> str:
    """The README's text with the table between its START and END markers written anew."""
    before, start, rest = readme.partition(START)
    _, end, after = rest.partition(END)
    if not (start and end):
        raise ValueError(f"the README has no {START} ... {END} markers")
    return f"{before}{START}\n\n{settings_table(settings_class)}\n\n{END}{after}"


def env_example_problems(text: str, settings_class: type[BaseSettings]) -> list[str]:
    """What .env.example says that `Settings` does not: each variable once, with its default (commented if unset)."""
    found = {}
    for line in text.splitlines():
        assignment = line.removeprefix("# ")
        name, equals, value = assignment.partition("=")
        if equals and name.isupper() and name.replace("_", "").isalnum():
            found[name] = (line.startswith("#"), value)
    problems = []
    for name, field in settings_class.model_fields.items():
        variable, default = name.upper(), shown_default(field.default)
        if variable not in found:
            problems.append(f"{variable} is missing")
            continue
        commented, value = found.pop(variable)
        if default == "unset" and not commented:
            problems.append(f"{variable} is unset by default: it should be a comment")
        elif default != "unset" and (commented or value != default):
            problems.append(f"{variable}={value} should be {variable}={default}")
    problems += [f"{name} is not a setting" for name in found]
    return problems
