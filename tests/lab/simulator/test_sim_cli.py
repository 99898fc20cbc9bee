"""The commands: settings from flags and SIM_*, one-line errors with exit code 2, a clean stop."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest

from simulator.settings import load_settings
from tests.lab.simulator.sim_testing import PROJECT_ROOT, chat_body, recorded_call, write_recording


def run_command(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m ...` from the project root and wait for it."""
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def assert_one_line_usage_error(result: subprocess.CompletedProcess, *words: str) -> None:
    """Exit code 2 and exactly one line on stderr that contains every word."""
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for word in words:
        assert word in result.stderr


def test_a_flag_wins_over_the_environment_which_wins_over_the_default():
    settings = load_settings(["--speed", "0.5"], {"SIM_SPEED": "3", "SIM_SEED": "9", "SIM_ACCESS_LOG": "yes"})
    assert (settings.speed, settings.seed, settings.access_log, settings.port) == (0.5, 9, True, 8100)
    assert load_settings(["--access-log"], {}).access_log is True


@pytest.mark.parametrize(
    ("argv", "environ", "words"),
    [
        (["--speed", "fast"], {}, ["--speed"]),
        (["--speed", "-1"], {}, ["--speed"]),
        (["--nope"], {}, ["--nope"]),
        (["--mode", "random"], {}, ["--mode"]),
        (["--error-rate", "0.7", "--hang-rate", "0.7"], {}, ["--error-rate", "--hang-rate"]),
        ([], {"SIM_PORT": "70000"}, ["SIM_PORT"]),
        ([], {"SIM_MODE": "shuffle"}, ["SIM_MODE"]),
    ],
)
def test_bad_settings_exit_2_with_one_line(capsys, argv, environ, words):
    with pytest.raises(SystemExit) as stopped:
        load_settings(argv, environ)
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1
    assert all(word in error for word in words)


def test_help_documents_every_flag_and_its_variable():
    result = run_command("simulator", "--help")
    assert result.returncode == 0
    for text in ("--speed", "SIM_SPEED", "--quota", "SIM_QUOTA", "--hang-s", "--admin-token", "sequence"):
        assert text in result.stdout


def test_a_bad_flag_on_the_command_line(tmp_path):
    assert_one_line_usage_error(run_command("simulator", "--port", "eighty"), "--port")
    assert_one_line_usage_error(run_command("simulator", env={"SIM_SPEED": "fast"}), "SIM_SPEED")


def test_an_unreadable_or_invalid_recording(tmp_path):
    assert_one_line_usage_error(
        run_command("simulator", "--recording", str(tmp_path / "missing.jsonl")), "missing.jsonl"
    )
    broken = write_recording(tmp_path / "broken.jsonl", [recorded_call("classify", 10)])
    with broken.open("a") as file:
        file.write('{"operation": "draft", "endpoint": "chat", "model": "m", "latency_ms": "slow"}\n')
    assert_one_line_usage_error(run_command("simulator", "--recording", str(broken)), "line 3", "latency_ms")


def test_a_port_in_use():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert_one_line_usage_error(run_command("simulator", "--port", port), port)


def test_start_up_prints_one_line_of_settings(server_factory):
    sim = server_factory(
        "--speed", "0.01", "--seed", "9", "--admin-token", "hidden-token", env={"SIM_SPEED": "5", "SIM_QUOTA": "42"}
    )
    with sim.client() as client:
        assert client.get("/health").status_code == 200
    assert "speed=0.01" in sim.first_line and "seed=9" in sim.first_line and "quota=42/min" in sim.first_line
    assert "hidden-token" not in sim.first_line
    sim.process.terminate()
    assert sim.process.wait(timeout=10) == 0
    assert sim.process.stdout.read() == "simulator: stopped\n"  # nothing else after the start-up line
    assert sim.stderr_path.read_text() == ""


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_it_cleanly_even_with_a_hanging_call(server_factory, stop_signal):
    """An ordinary call in flight still finishes; a hanging one is answered 503 after a short grace."""
    sim = server_factory("--speed", "0.5", "--hang-s", "120")
    answers = {}

    def call(name: str, headers: dict) -> None:
        answers[name] = httpx.post(sim.api_url + "/chat/completions", json=chat_body(), headers=headers, timeout=30)

    callers = [
        threading.Thread(target=call, args=("hang", {"X-Sim-Fault": "hang"})),
        threading.Thread(target=call, args=("ordinary", {})),
    ]
    for caller in callers:
        caller.start()
    with sim.client() as client:
        assert client.get("/health").status_code == 200
        time.sleep(0.2)  # let both calls arrive
    sim.process.send_signal(stop_signal)
    assert sim.process.wait(timeout=15) == 0
    for caller in callers:
        caller.join(timeout=15)
    assert answers["ordinary"].status_code == 200
    assert answers["hang"].status_code == 503
    assert answers["hang"].json()["error"]["code"] == "simulator_stopping"
    assert "stopped" in sim.process.stdout.read()
    assert "Traceback" not in sim.stderr_path.read_text()


def test_stats_prints_the_table_and_refuses_an_unreadable_file(tmp_path):
    result = run_command("simulator.stats", "simulator/recordings/course.jsonl")
    assert result.returncode == 0
    assert "classify" in result.stdout and "910.0" in result.stdout and "1100.0" in result.stdout
    assert "2210.0" in result.stdout
    assert_one_line_usage_error(run_command("simulator.stats", str(tmp_path / "none.jsonl")), "none.jsonl")


def test_generate_check_tells_whether_a_file_matches(tmp_path):
    assert run_command("simulator.generate", "--check").returncode == 0
    other = tmp_path / "other.jsonl"
    other.write_text("{}\n")
    assert run_command("simulator.generate", "--check", "--out", str(other)).returncode == 1
    assert_one_line_usage_error(run_command("simulator.generate", "--calls", "4", "--out", str(other)), "odd")


def test_the_other_commands_have_help_and_one_line_errors():
    for module in ("simulator.record", "simulator.stats", "simulator.generate"):
        assert run_command(module, "--help").returncode == 0, module
    no_upstream = {"SIM_UPSTREAM_URL": ""}
    assert_one_line_usage_error(
        run_command("simulator.record", "--out", "x.jsonl", env=no_upstream), "SIM_UPSTREAM_URL"
    )
