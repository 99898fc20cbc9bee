"""`python -m scripts.probe`, run against a real process of the experiment app: the readings' shapes, its errors."""

import json

import pytest

from scripts.toolkit.processes import free_port


def probe(run_command, url: str, path: str, concurrency: int, requests: int) -> dict:
    """The figures of one probe run that must succeed."""
    result = run_command(
        "probe",
        path,
        "--url",
        url,
        "--concurrency",
        str(concurrency),
        "--requests",
        str(requests),
        "--interval",
        "0.02",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.timing
def test_a_blocking_sleep_serialises_the_route_and_stalls_health(run_command, running_app):
    blocking = probe(run_command, running_app, "/sleep/async-blocking?ms=100", 5, 10)
    awaited = probe(run_command, running_app, "/sleep/async?ms=100", 5, 10)
    assert (blocking["ok"], blocking["errors"]) == (10, 0)
    assert blocking["wall_s"] >= 0.9  # 10 x 100 ms, one at a time
    assert awaited["rps"] >= 2.5 * blocking["rps"]  # 5x with room to spare
    assert blocking["health_ms"]["p50"] >= 5 * awaited["health_ms"]["p50"]


@pytest.mark.timing
def test_cpu_work_on_the_loop_stalls_health_and_a_process_pool_does_not(run_command, running_app):
    on_the_loop = probe(run_command, running_app, "/cpu/async?loops=2000000", 4, 16)
    in_processes = probe(run_command, running_app, "/cpu/process?loops=2000000", 4, 16)
    assert on_the_loop["health_ms"]["p50"] >= 4 * in_processes["health_ms"]["p50"]
    assert on_the_loop["server_ms"]["count"] == 16  # the API's own times came with every answer


def test_an_api_that_is_not_running_is_one_line_and_exit_code_2(run_command):
    result = run_command("probe", "/health", "--url", f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: cannot reach the API at")
    assert result.stdout == ""


def test_a_route_that_does_not_exist_is_exit_code_2(run_command, running_app):
    result = run_command("probe", "/nothing-here", "--url", running_app)
    assert result.returncode == 2
    assert "answered 404 not_found" in result.stderr


def test_a_path_without_a_slash_is_a_usage_error(run_command):
    result = run_command("probe", "sleep/def")
    assert result.returncode == 2
    assert "start it with /" in result.stderr


def test_flags_of_the_app_to_start_are_a_usage_error_with_url(run_command, running_app):
    result = run_command("probe", "/sleep/def", "--url", running_app, "--thread-limit", "100", "--workers", "2")
    assert result.returncode == 2
    assert "--thread-limit, --workers: for the app it starts, not with --url" in result.stderr
