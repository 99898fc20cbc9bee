"""What the experiment commands start, they stop; `python -m scripts.experiments` serves the app by hand.

Each command runs with a marker in its environment, which the processes it starts inherit: once it
has ended, no process with that marker may be left, and nothing may listen where its app did.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import httpx
import psutil
import pytest

from scripts.experiments.runner import experiment_app
from scripts.experiments.settings import ExperimentSettings
from scripts.toolkit.processes import free_port, start_process, stop_process
from scripts.toolkit.running import apis
from tests.lab.tools.commands import ctrl_c_as_from_a_terminal

COMMANDS = {
    "probe a def route": ["probe", "/sleep/def?ms=10", "--requests", "20"],
    "probe an upstream route (and a simulator)": ["probe", "/upstream/async", "--requests", "10", "--concurrency", "5"],
    "sweep": ["sweep", "/sleep/async?ms=10", "--concurrency", "1,4", "--duration", "0.5"],
    "thread_cliff": ["thread_cliff", "--thread-limit", "2", "--levels", "1", "--hold-ms", "200", "--samples", "2"],
}


def started_with(marker: str, besides: int | None = None) -> list[psutil.Process]:
    """The processes whose environment holds `marker`, but the one of pid `besides`."""
    found = []
    for process in psutil.process_iter(["pid", "environ"]):
        environ = process.info["environ"] or {}
        if environ.get("EXPERIMENT_TEST_MARKER") == marker and process.pid != besides:
            found.append(process)
    return found


def listening(url: str) -> bool:
    """True when something accepts connections at `url`'s port of 127.0.0.1."""
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", int(url.rsplit(":", 1)[1]))) == 0


def start_command(args: list[str], marker: str) -> subprocess.Popen:
    """`python -m scripts.ARGS --json` in the background, as a student's terminal would run it."""
    argv = [sys.executable, "-m", f"scripts.{args[0]}", *args[1:], "--json"]
    environment = {**os.environ, "EXPERIMENT_TEST_MARKER": marker}
    return start_process(argv, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("args", COMMANDS.values(), ids=COMMANDS.keys())
def test_each_command_starts_its_own_app_and_leaves_nothing_running(args):
    marker = uuid.uuid4().hex
    command = start_command(args, marker)
    seen: set[int] = set()
    while command.poll() is None:
        seen |= {process.pid for process in started_with(marker, besides=command.pid)}
        time.sleep(0.05)
    out, err = command.communicate()
    assert command.returncode == 0, err
    assert seen, "the command started nothing"
    assert "starting the experiment app" in err
    assert ("starting the simulator" in err) == ("/upstream/" in args[1])
    assert started_with(marker, besides=command.pid) == []
    figures = json.loads(out)
    if "url" in figures:  # probe and sweep say where they measured
        assert not listening(figures["url"])


def test_a_route_that_fails_stops_the_app_too():
    marker = uuid.uuid4().hex
    command = start_command(["probe", "/nothing-here"], marker)
    _, err = command.communicate(timeout=120)
    assert command.returncode == 2
    assert err.strip().splitlines()[-1].startswith("error: GET /nothing-here answered 404 not_found")
    assert started_with(marker) == []


def test_sigterm_during_the_measurement_stops_what_the_command_started():
    marker = uuid.uuid4().hex
    command = start_command(["probe", "/upstream/async", "--requests", "100000"], marker)
    deadline = time.monotonic() + 60
    while "probing GET" not in (line := command.stderr.readline()):
        assert line and time.monotonic() < deadline, "the command did not start measuring"
    assert len(started_with(marker, besides=command.pid)) >= 2  # the simulator and the app
    command.send_signal(signal.SIGTERM)
    _, err = command.communicate(timeout=60)
    assert command.returncode == 130
    assert err.strip().splitlines()[-1] == "interrupted"
    assert started_with(marker) == []


def test_the_runner_starts_the_workers_asked_for():
    with apis.started(experiment_app(ExperimentSettings(), workers=2)) as app:
        workers = [
            child
            for child in psutil.Process(app.process.pid).children()
            if "spawn_main" in " ".join(child.cmdline())  # not multiprocessing's resource tracker
        ]
        assert len(workers) == 2
        assert httpx.get(f"{app.url}/health").json() == {"status": "ok"}
    assert not listening(app.url)
    assert not any(worker.is_running() for worker in workers)


def test_the_app_served_by_hand_answers_on_its_port_and_stops_cleanly_on_ctrl_c():
    port = free_port()
    argv = [sys.executable, "-m", "scripts.experiments", "--port", str(port), "--thread-limit", "8"]
    with ctrl_c_as_from_a_terminal():
        server = start_process(argv, stdout=None, stderr=subprocess.PIPE, text=True)
    try:
        assert "experiment app at http://127.0.0.1:" in server.stderr.readline()
        deadline = time.monotonic() + 30
        while not listening(f"http://127.0.0.1:{port}"):
            assert server.poll() is None and time.monotonic() < deadline, "the app did not start"
            time.sleep(0.05)
        assert httpx.get(f"http://127.0.0.1:{port}/sleep/def", params={"ms": 1}).json() == {"waited_ms": 1}
        os.killpg(server.pid, signal.SIGINT)  # what Ctrl+C in its terminal sends
        _, err = server.communicate(timeout=60)
    finally:
        stop_process(server, 10)  # already stopped, unless an assertion failed first
    assert server.returncode == 0
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "stopped"
    assert not listening(f"http://127.0.0.1:{port}")


def test_serving_on_a_port_in_use_is_one_line_and_exit_code_2(run_command):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_command("experiments", "--port", str(port))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: port {port} is in use on 127.0.0.1: stop what runs there or choose another port"
    ]
