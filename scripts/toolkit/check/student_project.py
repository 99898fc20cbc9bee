"""A student's project as scripts.check sees it: the lesson files it holds, its settings, its PostgreSQL.

Nothing here writes into the project. Its settings are read as the API reads them (pydantic-settings: the
environment wins over `.env`), its PostgreSQL is its DATABASE_URL or its embedded server in `.lab/pgdata`.
"""

import json
import os
import re
import sys
from contextlib import AbstractContextManager
from pathlib import Path

from dotenv import dotenv_values

from scripts.toolkit.cli import CommandError
from scripts.toolkit.databases import postgres_server
from scripts.toolkit.lessons.spec import SNAPSHOTS, Lesson, lesson_chain
from scripts.toolkit.lessons.suites import NO_TRACES
from scripts.toolkit.running.commands import run_to_completion
from ticket_api.config import Settings

SETTINGS = tuple(name.upper() for name in Settings.model_fields)
MISSING, COPIED, NOT_COPIED, EDITED = "missing", "copied", "not copied", "edited"


def same_text(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes, whatever their line endings (git on Windows may write CRLF)."""
    return a.read_bytes().replace(b"\r\n", b"\n") == b.read_bytes().replace(b"\r\n", b"\n")


def file_states(project: Path, lessons: list[Lesson], lesson_id: str) -> dict[str, str]:
    """Each file the lessons up to `lesson_id` copy: copied, missing, not copied (as it was before) or edited."""
    chain = lesson_chain(lessons, lesson_id)
    before = SNAPSHOTS / chain[0].before
    states = {}
    for lesson in chain:
        for name in lesson.copy:
            mine, source, old = project / name, SNAPSHOTS / lesson.source / name, before / name
            if not mine.is_file():
                states[name] = MISSING
            elif same_text(mine, source):
                states[name] = COPIED
            elif old.is_file() and same_text(mine, old):
                states[name] = NOT_COPIED
            else:
                states[name] = EDITED
    return states


def default_lesson(project: Path, lessons: list[Lesson]) -> Lesson:
    """The latest lesson whose copy step the project shows (one of its files copied or edited), else the first."""
    shown = [
        lesson
        for lesson in lessons
        if any(file_states(project, lessons, lesson.id)[name] in (COPIED, EDITED) for name in lesson.copy)
    ]
    return shown[-1] if shown else lessons[0]


def settings_given(project: Path) -> dict[str, tuple[str, str]]:
    """The API's settings the student gives: {NAME: (value, where)}, where is "your terminal" or ".env line N"."""
    env_file = project / ".env"
    from_file = (
        {k.upper(): v for k, v in dotenv_values(env_file).items() if v is not None} if env_file.is_file() else {}
    )
    environment = {name.upper(): value for name, value in os.environ.items()}  # names are not case-sensitive
    given = {}
    for name in SETTINGS:
        if name in environment:
            given[name] = (environment[name], "your terminal")
        elif name in from_file:
            given[name] = (from_file[name], f".env line {_line_of(env_file, name)}")
    return given


def _line_of(env_file: Path, name: str) -> int:
    pattern = re.compile(rf"^\s*(export\s+)?{name}\s*=", re.IGNORECASE)
    lines = env_file.read_text(errors="replace").splitlines()
    return next((number for number, line in enumerate(lines, 1) if pattern.match(line)), 0)


class InvalidSettings(CommandError):
    """The project's own `load_settings()` refuses its settings: its one line."""


# In the project's folder, with its Python: its settings as its own code reads them, or why it refuses them.
READ_SETTINGS = """
import json, sys
from ticket_api.config import load_settings
from ticket_api.errors import StartupError
try:
    settings = load_settings()
except StartupError as exc:
    print(json.dumps({"invalid": str(exc)}))
else:
    print(json.dumps({"values": {name: str(getattr(settings, name.lower(), None)) for name in sys.argv[1:]}}))
"""


def read_settings(project: Path, names: list[str]) -> dict[str, str]:
    """The settings' values as the project's own code reads them (its `load_settings()`, in its folder);
    InvalidSettings when it refuses them."""
    argv = [sys.executable, "-c", READ_SETTINGS, *names]
    result = run_to_completion(argv, project, {**os.environ, **NO_TRACES}, timeout_s=60)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or ["no output"]
        raise CommandError(f"could not read your settings with ticket_api.config.load_settings(): {lines[-1]}")
    answer = json.loads(result.stdout)
    if "invalid" in answer:
        raise InvalidSettings(answer["invalid"])
    return answer["values"]


def settings_refused(project: Path) -> bool:
    """Whether the project's own `load_settings()` refuses the settings it is given."""
    try:
        read_settings(project, [])
    except InvalidSettings:
        return True
    return False


def database_server(project: Path) -> AbstractContextManager[str]:
    """The project's PostgreSQL server, as its API would reach it: its DATABASE_URL, else its embedded server, started
    if it is not running and stopped after, unless another process uses it.

    A project without either is an environment problem (CommandError): the check creates no data folder.
    """
    url, _ = settings_given(project).get("DATABASE_URL", ("", ""))
    pgdata = project / ".lab" / "pgdata"
    if not url.strip() and not (pgdata / "PG_VERSION").is_file():
        raise CommandError(
            f"{project} has no PostgreSQL yet: no DATABASE_URL, and no embedded server in .lab/pgdata; "
            "run `python -m scripts.db init` in it first"
        )
    return postgres_server(url.strip(), pgdata)
