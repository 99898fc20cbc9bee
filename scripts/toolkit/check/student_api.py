"""The live half of scripts.check: a student's API and the lab's simulator on the check's Stack, and a lesson command
run against them.

The API is the student's own code, started in their folder with their Python (the one running the check) under
toolkit.check.loop_sampler, on a free port, and stopped by pid. The simulator is the lab's, a measuring instrument like
the lesson command itself, which runs from the lab's folder. While a command runs, a thread asks PostgreSQL
(pg_stat_activity) and the simulator (GET /admin/stats) what they see, from outside the student's code.
"""

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from scripts.toolkit.check import loop_sampler
from scripts.toolkit.cli import PROJECT_ROOT, CommandError
from scripts.toolkit.lessons.spec import command_speed, run_command
from scripts.toolkit.lessons.suites import NO_TRACES
from scripts.toolkit.measure.database_state import connections_held
from scripts.toolkit.measure.meanwhile import WatchFailed, polled_in_thread
from scripts.toolkit.measure.rates import read_simulator_stats
from scripts.toolkit.running.apis import output_since
from scripts.toolkit.running.stack import ApiStopped, Stack
from scripts.toolkit.services import Service, ServiceDidNotAnswer
from ticket_api.errors import StartupError
from ticket_api.instruments.connections import connect

CHECK_SPEED = 0.5  # the simulator's speed for the commands without a `speed` of their own in lessons.toml
# A lesson command takes 20 s at most on a correct project (the blocking stall at speed 1); a broken one can take
# minutes (a burst whose tickets wait on a held event loop for a connection), and is failed at this bound.
COMMAND_TIMEOUT_S = 35
SAMPLE_EVERY_S = 0.02
HELD_AFTER_S = 1.0  # at speed 1: idle in a transaction longer than a classify call (0.91 s) is held through the AI wait
API_START_TIMEOUT_S = 60  # how long Service.start() waits


class ApiDidNotStart(CommandError):
    """The student's API stopped during start-up, or did not answer in time: why, in one line, and the name of the
    exception that stopped it, where it was one (`kind`: "SyntaxError", "ImportError" ...)."""

    def __init__(self, line: str, kind: str | None = None):
        super().__init__(line)
        self.kind = kind


@dataclass
class Run:
    """One lesson command against the student's API: its figures, and what the API logged meanwhile."""

    figures: dict
    held: list[dict] = field(default_factory=list)  # loop_sampler's reports: where the event loop was held
    log: list[str] = field(default_factory=list)


@contextmanager
def student_api(stack: Stack, project: Path, env: dict[str, str], speed: float = CHECK_SPEED) -> Iterator[Service]:
    """The student's API with their settings and `env` on top, in front of the lab's simulator at `speed`.

    ApiDidNotStart says, in one line, why it did not start.
    """
    settings = {"LOG_LEVEL": "INFO", **NO_TRACES, **env}
    # The lab's uvicorn command line, run by loop_sampler.py (which then runs uvicorn's) instead of `-m uvicorn`.
    script = Path(loop_sampler.__file__)
    simulator = stack.kept_simulator(speed)
    with ExitStack() as running:
        try:
            api = running.enter_context(stack.api(env=settings, simulator=simulator, project=project, script=script))
        except ServiceDidNotAnswer:
            raise ApiDidNotStart(f"no answer to GET /health within {API_START_TIMEOUT_S} s") from None
        except ApiStopped as exc:  # its output from this start: not an earlier API's
            raise startup_failure(loop_sampler.read_failure(exc.output), exc.output) from None
        yield api


def run_command_on(stack: Stack, project: Path, command: dict) -> Run:
    """Start the API as the command says (`api_env`), run the command from the lab's folder, stop the API."""
    speed = command_speed(command, CHECK_SPEED)
    with student_api(stack, project, command.get("api_env", {}), speed) as api:
        logged = api.log_path.stat().st_size
        with peaks_meanwhile(stack.dsn, stack.kept_simulator(speed).url, HELD_AFTER_S * speed) as peaks:
            figures = run_command(command, api.url, speed, cwd=PROJECT_ROOT, timeout_s=COMMAND_TIMEOUT_S)
        text = output_since(api, logged)
    held = loop_sampler.read_held(text)
    figures |= peaks | {"loop_held_s": round(sum(report["ms"] for report in held) / 1000, 2)}
    return Run(figures, held, text.splitlines())


@contextmanager
def peaks_meanwhile(dsn: str, simulator_url: str, held_after_s: float) -> Iterator[dict[str, int]]:
    """While the block runs: the simulator's calls in flight and the API's connections held, at their peaks."""
    peaks = {"provider_calls_at_once": 0, "connections_held": 0}
    try:
        conn = connect(dsn, autocommit=True)
    except (psycopg.Error, StartupError) as exc:
        raise CommandError(f"could not watch PostgreSQL and the simulator: {exc}") from None

    def sample() -> None:
        stats = read_simulator_stats(client.get(f"{simulator_url}/admin/stats", timeout=5))
        held = connections_held(conn, held_after_s)
        peaks["provider_calls_at_once"] = max(peaks["provider_calls_at_once"], stats["in_flight"])
        peaks["connections_held"] = max(peaks["connections_held"], held)

    try:
        with conn, httpx.Client() as client, polled_in_thread(sample, SAMPLE_EVERY_S, "check-sampler"):
            yield peaks
    except WatchFailed as exc:
        raise CommandError(f"could not watch PostgreSQL and the simulator: {exc.__cause__ or exc}") from None


def startup_failure(failure: dict | None, output: str) -> ApiDidNotStart:
    """Why the API did not start, in one line, from the loop sampler's fields: `SyntaxError in ticket_api/intake.py
    line 26: unmatched ')'`; the last line of its output where they say nothing."""
    if failure is None or not (failure["exception"] or failure["message"]):
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        return ApiDidNotStart(lines[-1] if lines else "it stopped without a word")
    name, message = failure["exception"], failure["message"]
    if name is None:  # the app's own one line
        return ApiDidNotStart(message)
    place = f" in {failure['file']} line {failure['line']}" if failure["file"] else ""
    return ApiDidNotStart(f"{name}{place}: {message}", name)
