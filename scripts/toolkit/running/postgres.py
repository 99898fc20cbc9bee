"""The lab's embedded PostgreSQL as processes: its postmaster, whose CPU the bench counts, and the soak's crash of it.

Only an embedded server of the lab's own is found here, by the first line of its `postmaster.pid`
(PostgreSQL's documented lock file): the server behind DATABASE_URL may be anyone's, anywhere.
"""

import time
from pathlib import Path

import psutil

from scripts.toolkit.cli import CommandError
from ticket_api.config import load_settings
from ticket_api.instruments.embedded import PGDATA, embedded_dsn, embedded_postgres

DOWN_S = 2.0  # how long a crashed server stays down before it is started again


def postmaster(pgdata: Path | None = None) -> psutil.Process:
    """The postmaster of the embedded server in `pgdata` (the lab's own by default); CommandError where there is none
    (DATABASE_URL is set, or the server does not run)."""
    if pgdata is None:
        if load_settings().database_url:
            raise CommandError("DATABASE_URL is set: that PostgreSQL is not the lab's embedded server to watch")
        pgdata = PGDATA
    try:
        return psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
    except (OSError, ValueError, IndexError, psutil.NoSuchProcess):
        raise CommandError(f"no embedded PostgreSQL runs in {pgdata} (no live postmaster.pid)") from None


def kill_postgres(pgdata: Path) -> None:
    """SIGKILL to the postmaster of the embedded server in `pgdata`; returns once its backends have exited too."""
    server = postmaster(pgdata)
    backends = server.children()
    server.kill()
    # Each backend notices its postmaster's death and exits; a new server cannot start while one holds the memory.
    _, alive = psutil.wait_procs([server, *backends], timeout=30)
    if alive:
        raise CommandError(f"PostgreSQL processes {[process.pid for process in alive]} outlived their postmaster")


def crash_postgres(pgdata: Path) -> dict:
    """SIGKILL to the postmaster of the server in `pgdata`, started again (crash recovery) DOWN_S later."""
    killed = time.perf_counter()
    kill_postgres(pgdata)
    time.sleep(DOWN_S)
    embedded_dsn(pgdata)
    return {"down_s": time.perf_counter() - killed}


def client_program(name: str) -> Path:
    """A client program of PostgreSQL (pgbench, psql ...), from the embedded-postgres package: whichever server the
    lab uses, the package is installed."""
    # The package makes pg_config and the other commands' functions at import: they are not in its types.
    bindir = embedded_postgres.pg_config(["--bindir"])  # type: ignore[attr-defined]
    return Path(bindir.strip()) / name
