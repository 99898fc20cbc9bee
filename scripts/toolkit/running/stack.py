"""The lab as a command starts it, from nothing: PostgreSQL, simulators, and APIs in front of them.

Every command that starts the lab does it with a Stack: compare, capacity, bench (`running_stack()`, then
`Stack.api(mode)`: a simulator of its own, quota off, and the API in that mode), scripts.check (a student's
PostgreSQL, simulators kept per speed, their API), scripts.snapshots, scripts.soak and the experiments' runner.
PostgreSQL starts when first needed. Whatever a stack starts is stopped by pid when its `with` block ends: normally,
on an error, on Ctrl+C and on SIGTERM (toolkit.cli.run makes it one).
"""

import argparse
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path

from scripts.toolkit import services
from scripts.toolkit.cli import PROJECT_ROOT, progress
from scripts.toolkit.commands.options import Clock, one_or_more_of
from scripts.toolkit.databases import init, postgres_server
from scripts.toolkit.running.apis import API_APP, api, output_since, started
from scripts.toolkit.services import Service, ServiceStopped
from ticket_api.config import load_settings
from ticket_api.instruments.connections import shown_dsn

MODES = ("blocking", "async", "thread")  # INTAKE_MODE's values (Settings.intake_mode), in the course's order
# The exit codes of the commands that start the whole lab and create tickets (compare, capacity).
EXIT_CODES = (
    "Exit codes: 0 every ticket answered 201, 1 some did not, 2 a port is in use, a start-up failed or bad arguments."
)


def provider_url(provider: Service) -> str:
    """The PROVIDER_URL of an app in front of a simulator: the simulator's address and its API root, /v1."""
    return f"{provider.url}/v1"


def lab_postgres() -> AbstractContextManager[str]:
    """The lab's PostgreSQL: the server of its DATABASE_URL, else its embedded one."""
    return postgres_server(load_settings().database_url)


class ApiStopped(ServiceStopped):
    """The API's process ended during its start-up; `output` is what it wrote since that start."""

    def __init__(self, message: str, output: str):
        super().__init__(message)
        self.output = output


class Stack:
    """One command's PostgreSQL (`server`, started when first needed; `dsn`, the database its APIs use), its
    simulators and its APIs; each stops when `resources` closes, or when its own block ends."""

    def __init__(
        self,
        resources: ExitStack,
        speed: float = 1.0,
        log_dir: Path | None = None,
        clock: Clock | None = None,
        postgres: Callable[[], AbstractContextManager[str]] = lab_postgres,
    ):
        self.resources, self.speed, self.log_dir, self.clock = resources, speed, log_dir, clock
        self.dsn = ""  # the database the APIs are given (DATABASE_URL), chosen by the command: running_stack's
        self._postgres = postgres
        self._server: str | None = None
        self._simulator: Service | None = None
        self._kept: dict[tuple, Service] = {}

    @property
    def server(self) -> str:
        """The PostgreSQL server's DSN, started when first needed."""
        if self._server is None:
            self._server = self.resources.enter_context(self._postgres())
        return self._server

    @property
    def simulator(self) -> Service:
        """The simulator of the API started last."""
        if self._simulator is None:
            raise RuntimeError("no API started yet: the simulator starts with it")
        return self._simulator

    @property
    def provider_url(self) -> str:
        """The PROVIDER_URL of the API started last: for another app in front of the same simulator."""
        return provider_url(self.simulator)

    def kept_simulator(self, speed: float | None = None, quota: int = 0, faults: tuple[str, ...] = ()) -> Service:
        """The lab's simulator at `speed` (the stack's by default), with this quota and these fault options, started
        when first needed and kept until the stack ends."""
        key = (self.speed if speed is None else speed, quota, faults)
        if key not in self._kept:
            folder = self.log_dir / f"simulator-{key[0]:g}" if self.log_dir else None
            service = services.simulator(speed=key[0], quota=quota, extra=list(faults), log_dir=folder)
            self._kept[key] = self.resources.enter_context(started(service))
        return self._kept[key]

    @contextmanager
    def api(
        self,
        mode: str | None = None,
        workers: int = 1,
        env: dict[str, str] | None = None,
        loop: str = "asyncio",
        factory: str | None = None,
        simulator: Service | None = None,
        speed: float | None = None,
        project: Path = PROJECT_ROOT,
        script: Path | None = None,
    ) -> Iterator[Service]:
        """The API of `project` (INTAKE_MODE=`mode`, the stack's database, `env` on top) on `loop` with `workers`
        processes, in front of `simulator`, or of a simulator of its own from `project`, quota off, at `speed` (the
        stack's by default); `factory`, a function that makes the app (scripts/client_apps.py's); `script`: see
        apis.uvicorn_command. ApiStopped, with the API's output, if it stops during its start-up.

        A simulator of its own, started afresh, replays the same seeded provider latencies to every mode: the modes
        differ only in how they wait.
        """
        name = run_name(mode or "api", loop)
        folder = self.log_dir / name if self.log_dir else None
        speed = self.speed if speed is None else speed
        with ExitStack() as own:
            if simulator is None:
                fresh = services.simulator(speed=speed, quota=0, log_dir=folder, cwd=project)
                simulator = own.enter_context(started(fresh))
                said = f"simulator at {simulator.url} (speed {speed:g}, quota off), "
            else:
                said = ""
            self._simulator = simulator
            settings = ({"DATABASE_URL": self.dsn} if self.dsn else {}) | ({"INTAKE_MODE": mode} if mode else {})
            settings |= env or {}
            service = api(
                provider_url(simulator),
                env=settings,
                workers=workers,
                log_dir=folder,
                cwd=project,
                loop=loop,
                app=factory or API_APP,
                factory=bool(factory),
                script=script,
            )
            before = service.log_path.stat().st_size if service.log_path.exists() else 0
            try:
                own.enter_context(started(service))
            except ServiceStopped as exc:  # what it wrote from this start on: not an earlier API's
                raise ApiStopped(str(exc), output_since(service, before)) from None
            if self.clock is not None:
                progress(f"[{self.clock}] {name}: {said}API at {service.url} on {loop}")
            yield service


@contextmanager
def running_stack(
    speed: float = 1.0,
    log_dir: Path | None = None,
    clock: Clock | None = None,
    postgres: Callable[[], AbstractContextManager[str]] = lab_postgres,
    load: bool = True,
) -> Iterator[Stack]:
    """A Stack for the length of the block; with `load`, PostgreSQL started at once and the small data set loaded
    into the server's own database (if missing), which the APIs then use."""
    with ExitStack() as resources:
        stack = Stack(resources, speed, log_dir, clock, postgres)
        if load:
            # This process starts the embedded server and so owns its lifetime; the APIs get its URL.
            loaded = init(stack.server, "small")
            stack.dsn = stack.server
            progress(f"database {shown_dsn(stack.dsn)}: {loaded}")
        yield stack


parse_modes = one_or_more_of(MODES)  # `blocking,async,thread` as a list of INTAKE_MODE values (an argparse type)


def add_modes_argument(parser: argparse.ArgumentParser, default: list[str], also: tuple[str, ...] = ()) -> None:
    """--modes: the INTAKE_MODE values to run, in order (compare, capacity, soak; `also`: other spellings)."""
    parser.add_argument(
        "--modes",
        *also,
        type=parse_modes,
        default=default,
        help=f"INTAKE_MODE values in the order to run (default {','.join(default)})",
    )


def run_name(mode: str, loop: str) -> str:
    """`blocking` on asyncio's loop (the default), `blocking-uvloop` on uvloop: for progress lines and file names."""
    return mode if loop == "asyncio" else f"{mode}-{loop}"
