"""The student's project on several worker processes (`uvicorn --workers 2`, as the next lesson runs it): one scrape of
/metrics gives the whole server's counts, each worker names itself in its log lines and in PostgreSQL, and the
workers share one embedded PostgreSQL, which the last one to stop stops (Ctrl+C)."""

import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from scripts.snapshots import SNAPSHOTS, copy_tree
from scripts.toolkit.cli import CommandError
from scripts.toolkit.measure.rates import by_label
from scripts.toolkit.metrics import read_metrics
from scripts.toolkit.processes import free_port, start_process, stop_process
from scripts.toolkit.running.apis import API_APP, started, uvicorn_command
from scripts.toolkit.running.commands import run_to_completion
from scripts.toolkit.running.postgres import postmaster
from scripts.toolkit.services import simulator
from ticket_api.instruments import workers

TICKET = {"customer_id": 1, "subject": "Parcel 51 has not arrived", "body": "It was due on Monday."}
OWN_EMBEDDED = {"DATABASE_URL": "", "PYTHONDONTWRITEBYTECODE": "1"}  # blank: the project's own embedded server


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of end-of-m02 with its own embedded PostgreSQL, initialised (and not running)."""
    folder = copy_tree(SNAPSHOTS / "end-of-m02", tmp_path_factory.mktemp("kitchens") / "project")
    argv = [sys.executable, "-m", "scripts.db", "init"]
    result = run_to_completion(argv, folder, {**os.environ, **OWN_EMBEDDED}, timeout_s=300)
    assert result.returncode == 0, result.stderr
    return folder


@contextmanager
def served(project: Path, log: Path, *options: str, workers: int = 1) -> Iterator[str]:
    """The project's API under uvicorn (`workers`, `options`) in front of a simulator, its output in `log`; stopped
    at the end as a terminal's Ctrl+C stops it (SIGINT to the whole group), which must end it cleanly."""
    with started(simulator(speed=0.01, quota=0, log_dir=log.parent)) as provider:
        port = free_port()
        env = {**os.environ, **OWN_EMBEDDED, "PROVIDER_URL": f"{provider.url}/v1", "LOG_LEVEL": "INFO"}
        with open(log, "wb") as output:
            api = start_process(uvicorn_command(API_APP, port, workers, "asyncio", *options), project, env, output)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_for(lambda: httpx.get(f"{url}/health", timeout=1).status_code == 200)
            yield url
        finally:
            os.killpg(api.pid, signal.SIGINT)
            stopped = api.wait(60)
            stop_process(api)
    assert stopped == 0


def ticket_lines(log: Path) -> list[str]:
    """The request log's lines of created tickets."""
    return [line for line in log.read_text().splitlines() if "POST /v1/tickets 201" in line]


def test_two_workers_count_together_name_themselves_and_leave_no_postgres_after_ctrl_c(project, tmp_path):
    pgdata, log = project / ".lab" / "pgdata", tmp_path / "api.log"
    with served(project, log, workers=2) as url:
        assert postmaster(pgdata).is_running()  # the workers' one server
        for _ in range(8):  # each on a new connection: the kernel hands them to either worker
            assert httpx.post(f"{url}/v1/tickets", json=TICKET, timeout=30).status_code == 201
        scrapes = [read_metrics(httpx.get(f"{url}/metrics", timeout=5).text) for _ in range(6)]
    workers = {pid for scrape in scrapes for pid in by_label(scrape, "ticket_api_event_loop_lag_seconds_count", "pid")}
    assert [scrape.get("ticket_api_tickets_total", outcome="created") for scrape in scrapes] == [8.0] * 6
    assert {scrape.get("ticket_api_provider_calls_total") for scrape in scrapes} == {24.0}
    assert len(workers) == 2  # the lag, each worker's own
    lines = ticket_lines(log)
    assert len(lines) == 8 and all(line.startswith("INFO ticket_api [worker ") for line in lines)
    assert {line.split("[worker ")[1].split("]")[0] for line in lines} <= workers
    with pytest.raises(CommandError):
        postmaster(pgdata)  # the last worker to stop stopped it
    assert not (pgdata / "postmaster.pid").exists()


def test_under_a_reloader_the_one_server_process_logs_and_counts_as_the_lesson_shows(project, tmp_path):
    log = tmp_path / "api.log"
    with served(project, log, "--reload") as url:  # as `fastapi dev` runs it: a child of the reloader
        for _ in range(2):
            assert httpx.post(f"{url}/v1/tickets", json=TICKET, timeout=30).status_code == 201
        scrape = read_metrics(httpx.get(f"{url}/metrics", timeout=5).text)
    assert scrape.get("ticket_api_tickets_total", outcome="created") == 2.0
    assert scrape.get("ticket_api_event_loop_lag_seconds_count") > 0  # one loop: no pid label
    lines = ticket_lines(log)
    assert len(lines) == 2 and all(line.startswith("INFO ticket_api: POST /v1/tickets 201 ") for line in lines)


def wait_for(ready, timeout_s: float = 60) -> None:
    """Return once `ready()` is true; fail after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if ready():
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the API did not answer"
        time.sleep(0.1)


def test_a_stopped_servers_metrics_folder_goes_and_a_running_ones_stays(tmp_path):
    """A server's folder is its supervisor's pid and start time: a folder whose pid runs again, in another process
    (a container's pid 1, run after run), counts nothing of the new server and goes."""
    running = tmp_path / workers.server_name(os.getpid())
    reused = tmp_path / f"{os.getpid()}-1"
    for folder in (running, reused):
        folder.mkdir()
    workers.forget_stopped_servers(tmp_path)
    assert running.is_dir() and not reused.exists()
