"""What the checks of one run of scripts.check share: the project, its lesson, and its Stack, started when needed.

The student's PostgreSQL server, the check's own database on it (`lab_check_<pid>`, with the lab's schema and
the small data set's customers, dropped at the end), the simulators and the student's API are started when a check
first needs them, so `--only copy` starts nothing. Each lesson command runs once, and again only when a timing check
runs a second time; the checks that read its figures share the run.
"""

import os
import tempfile
from contextlib import ExitStack
from pathlib import Path

from scripts.toolkit import dataset
from scripts.toolkit.check.student_api import CHECK_SPEED, Run, run_command_on
from scripts.toolkit.check.student_project import database_server
from scripts.toolkit.cli import progress
from scripts.toolkit.databases import temporary_database
from scripts.toolkit.lessons.spec import Lesson, find_command
from scripts.toolkit.running.stack import Stack
from ticket_api.instruments.connections import shown_dsn


class Context:
    """One run's project, lesson and lessons; `server`, `stack` and `run()` start what they need on first use."""

    def __init__(self, project: Path, lesson: Lesson, lessons: list[Lesson]):
        self.project, self.lesson, self.lessons = project, lesson, lessons
        self._resources = ExitStack()
        self._stack = Stack(self._resources, CHECK_SPEED, postgres=lambda: database_server(project))
        self._server: str | None = None
        self._runs: dict[str, Run] = {}

    @property
    def server(self) -> str:
        """The student's PostgreSQL server (DATABASE_URL, or their embedded one), started if needed."""
        if self._server is None:
            self._server = self._stack.server
            progress(f"PostgreSQL: {shown_dsn(self._server)}")
        return self._server

    @property
    def stack(self) -> Stack:
        """The lab's simulators and the student's API, on a database of the check's own."""
        if not self._stack.dsn:
            name = f"lab_check_{os.getpid()}"
            self._stack.dsn = self._resources.enter_context(
                temporary_database(self.server, name, dataset.SIZES["small"])
            )
            self._stack.log_dir = Path(self._resources.enter_context(tempfile.TemporaryDirectory(prefix="lab-check-")))
        return self._stack

    def run(self, name: str, api_env: dict[str, str], fresh: bool = False) -> Run:
        """The run of a lesson command, with `api_env` on top of its own; `fresh` runs it again."""
        command = find_command(self.lessons, name)
        command = {**command, "api_env": {**command.get("api_env", {}), **api_env}}
        key = f"{name} {sorted(command['api_env'].items())}"
        if fresh or key not in self._runs:
            env = " ".join(f"{setting}={value}" for setting, value in command["api_env"].items()) or "your own settings"
            progress(f"  `{command['run']}` against your API ({env}) ...")
            self._runs[key] = run_command_on(self.stack, self.project, command)
        return self._runs[key]

    def close(self) -> None:
        """Stop what was started, drop the check's database, release the embedded server."""
        self._resources.close()
