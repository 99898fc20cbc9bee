"""A student's project as scripts.check sees it: the lesson files it holds, its settings, its PostgreSQL.

Nothing here writes into the project. Its settings are read as the API reads them (pydantic-settings: the
environment wins over `.env`), its PostgreSQL is its DATABASE_URL or its embedded server in `.lab/pgdata`.
"""

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dotenv import dotenv_values

from scripts.toolkit.cli import PROJECT_ROOT, CommandError
from scripts.toolkit.lessons.spec import Lesson, lesson_chain
from scripts.toolkit.lessons.suites import NO_TRACES
from ticket_api.config import Settings

SNAPSHOTS = PROJECT_ROOT / "snapshots"
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


def read_settings(project: Path, names: list[str]) -> dict[str, str]:
    """The settings' values as the project's own code reads them (its `load_settings()`, in its folder)."""
    code = (
        "import json, sys\nfrom ticket_api.config import load_settings\nsettings = load_settings()\n"
        "print(json.dumps({name: str(getattr(settings, name.lower(), None)) for name in sys.argv[1:]}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *names],
        cwd=project,
        env={**os.environ, **NO_TRACES},
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or ["no output"]
        raise CommandError(f"could not read your settings with ticket_api.config.load_settings(): {lines[-1]}")
    return json.loads(result.stdout)


@contextmanager
def database_server(project: Path) -> Iterator[str]:
    """The project's PostgreSQL server, as its API would reach it: its DATABASE_URL, else its embedded server.

    The embedded one is started if it is not running, and stops after, unless another process uses it.
    A project without either is an environment problem (CommandError): the check creates no data folder.
    """
    url, _ = settings_given(project).get("DATABASE_URL", ("", ""))
    if url.strip():
        yield url.strip()
        return
    pgdata = project / ".lab" / "pgdata"
    if not (pgdata / "PG_VERSION").is_file():
        raise CommandError(
            f"{project} has no PostgreSQL yet: no DATABASE_URL, and no embedded server in .lab/pgdata; "
            "run `python -m scripts.db init` in it first"
        )
    from ticket_api.embedded import embedded_dsn, release_embedded  # only the embedded way needs the package

    dsn = embedded_dsn(pgdata)
    try:
        yield dsn
    finally:
        release_embedded(pgdata)
