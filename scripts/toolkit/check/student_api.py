"""The live half of scripts.check: a student's API and the lab's simulator, and a lesson command run against them.

The API is the student's own code, started in their folder with their Python (the one running the check) under
toolkit.check.loop_sampler, on a free port, and stopped by pid. The simulator is the lab's, a measuring instrument like
the lesson command itself, which runs from the lab's folder. While a command runs, a thread asks PostgreSQL
(pg_stat_activity) and the simulator (GET /admin/stats) what they see, from outside the student's code.
"""

import re
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

from scripts.toolkit import services
from scripts.toolkit.check import loop_sampler
from scripts.toolkit.cli import PROJECT_ROOT, CommandError
from scripts.toolkit.lessons.spec import command_speed, run_command
from scripts.toolkit.lessons.suites import NO_TRACES
from scripts.toolkit.measure.database_state import connections_held
from scripts.toolkit.measure.rates import read_simulator_stats
from scripts.toolkit.running import apis
from scripts.toolkit.services import Service, ServiceDidNotAnswer, ServiceStopped
from ticket_api.errors import StartupError
from ticket_api.instruments.connections import connect

CHECK_SPEED = 0.5  # the simulator's speed for the commands without a `speed` of their own in lessons.toml
# A lesson command takes 20 s at most on a correct project (the blocking stall at speed 1); a broken one can take
# minutes (a burst whose tickets wait on a held event loop for a connection), and is failed at this bound.
COMMAND_TIMEOUT_S = 35
SAMPLE_EVERY_S = 0.02
HELD_AFTER_S = 1.0  # at speed 1: idle in a transaction longer than a classify call (0.91 s) is held through the AI wait
API_START_TIMEOUT_S = 60


class ApiDidNotStart(CommandError):
    """The student's API stopped during start-up, or did not answer in time: why, in one line, and the name of the
    exception that stopped it, where its output gave one (`kind`: "SyntaxError", "StartupError" ...)."""

    def __init__(self, line: str, kind: str | None = None):
        super().__init__(line)
        self.kind = kind


@dataclass
class Run:
    """One lesson command against the student's API: its figures, and what the API logged meanwhile."""

    figures: dict
    held: list[dict] = field(default_factory=list)  # loop_sampler's reports: where the event loop was held
    log: list[str] = field(default_factory=list)


class CheckStack:
    """The simulators (one per speed, started when first needed, stopped by `resources`) and the student's API."""

    def __init__(self, project: Path, dsn: str, log_dir: Path, resources: ExitStack):
        self.project, self.dsn, self.log_dir, self.resources = project, dsn, log_dir, resources
        self.simulators: dict[float, Service] = {}

    def simulator(self, speed: float) -> Service:
        """The lab's simulator at `speed`, quota off."""
        if speed not in self.simulators:
            service = services.simulator(speed=speed, quota=0, log_dir=self.log_dir / f"simulator-{speed:g}")
            self.simulators[speed] = self.resources.enter_context(apis.started(service))
        return self.simulators[speed]

    @contextmanager
    def api(self, env: dict[str, str], speed: float = CHECK_SPEED) -> Iterator[Service]:
        """The student's API with their settings and `env` on top, in front of the simulator at `speed`.

        ApiDidNotStart says, in one line, why it did not start.
        """
        settings = {"DATABASE_URL": self.dsn, "LOG_LEVEL": "INFO", **NO_TRACES, **env}
        provider = f"{self.simulator(speed).url}/v1"
        # The lab's uvicorn command line, run by loop_sampler.py (which then runs uvicorn's) instead of `-m uvicorn`.
        script = Path(loop_sampler.__file__)
        service = apis.api(provider, env=settings, cwd=self.project, log_dir=self.log_dir, script=script)
        earlier = len(service.log_path.read_text(errors="replace")) if service.log_path.exists() else 0
        try:
            service.start(API_START_TIMEOUT_S)
        except ServiceDidNotAnswer:
            raise ApiDidNotStart(f"no answer to GET /health within {API_START_TIMEOUT_S} s") from None
        except ServiceStopped:
            log = service.log_path.read_text(errors="replace")[earlier:]  # this start's output, not an earlier API's
            raise startup_failure(log, self.project) from None
        try:
            yield service
        finally:
            service.stop(apis.STOP_TIMEOUT_S)

    def run(self, command: dict) -> Run:
        """Start the API as the command says (`api_env`), run the command from the lab's folder, stop the API."""
        speed = command_speed(command, CHECK_SPEED)
        with self.api(command.get("api_env", {}), speed) as api:
            logged = len(api.log_path.read_text(errors="replace"))
            with peaks_meanwhile(self.dsn, self.simulator(speed).url, HELD_AFTER_S * speed) as peaks:
                figures = run_command(command, api.url, speed, cwd=PROJECT_ROOT, timeout_s=COMMAND_TIMEOUT_S)
            text = api.log_path.read_text(errors="replace")[logged:]
        held = loop_sampler.read_held(text)
        figures |= peaks | {"loop_held_s": round(sum(report["ms"] for report in held) / 1000, 2)}
        return Run(figures, held, text.splitlines())


@contextmanager
def peaks_meanwhile(dsn: str, simulator_url: str, held_after_s: float) -> Iterator[dict[str, int]]:
    """While the block runs: the simulator's calls in flight and the API's connections held, at their peaks."""
    peaks = {"provider_calls_at_once": 0, "connections_held": 0}
    stop, failures = threading.Event(), []

    def sample() -> None:
        try:
            with connect(dsn, autocommit=True) as conn, httpx.Client() as client:
                while not stop.wait(SAMPLE_EVERY_S):
                    stats = read_simulator_stats(client.get(f"{simulator_url}/admin/stats", timeout=5))
                    held = connections_held(conn, held_after_s)
                    peaks["provider_calls_at_once"] = max(peaks["provider_calls_at_once"], stats["in_flight"])
                    peaks["connections_held"] = max(peaks["connections_held"], held)
        except (psycopg.Error, StartupError, httpx.HTTPError, KeyError, ValueError) as exc:
            failures.append(exc)

    thread = threading.Thread(target=sample, name="check-sampler", daemon=True)
    thread.start()
    try:
        yield peaks
    finally:
        stop.set()
        thread.join(10)
    if failures:
        raise CommandError(f"could not watch PostgreSQL and the simulator: {failures[0]}")


TRACEBACK_FILE = re.compile(r'^\s*File "(.+)", line (\d+)')
EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)): (.*)$")


def startup_failure(log_text: str, project: Path) -> ApiDidNotStart:
    """Why the API did not start, from its output: `SyntaxError in ticket_api/intake.py line 26: invalid syntax`."""
    lines = [line.rstrip() for line in log_text.splitlines() if line.strip()]
    frames = [
        frame
        for frame in map(TRACEBACK_FILE.match, lines)
        if frame and loop_sampler.in_project(Path(frame[1]), project)
    ]
    place = f"{Path(frames[-1][1]).relative_to(project).as_posix()} line {frames[-1][2]}" if frames else None
    exceptions = [match for match in (EXCEPTION.match(line.strip()) for line in lines) if match]
    if exceptions:
        name, message = exceptions[-1][1].rsplit(".", 1)[-1], exceptions[-1][2]
        return ApiDidNotStart(f"{name} in {place}: {message}" if place else f"{name}: {message}", name)
    startup = [line.removeprefix("ERROR:").strip() for line in lines if line.startswith("ERROR:")]
    reasons = [line for line in startup if "Application startup failed" not in line and "Traceback" not in line]
    if reasons:
        return ApiDidNotStart(reasons[-1])
    return ApiDidNotStart(lines[-1].strip() if lines else "it stopped without a word")
