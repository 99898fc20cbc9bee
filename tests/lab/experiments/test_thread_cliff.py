"""`python -m scripts.thread_cliff`: the trivial def route waits once the slow ones hold every thread."""

import asyncio
import json

import pytest

from scripts.experiments.app import create_app
from scripts.experiments.cliff import find_cliff, measure_cliff
from scripts.experiments.settings import ExperimentSettings
from tests.servers import serve

HOLD_MS = 400


def test_the_cliff_is_the_first_level_where_the_trivial_route_waited():
    rows = [
        {"in_flight": 20, "trivial_p50_ms": 2.0},
        {"in_flight": 40, "trivial_p50_ms": 890.0},
        {"in_flight": 60, "trivial_p50_ms": 950.0},
    ]
    assert find_cliff(rows, hold_ms=1000) == 40
    assert find_cliff(rows[:1], hold_ms=1000) is None


@pytest.mark.timing
def test_the_command_starts_its_own_app_and_finds_the_cliff_at_the_thread_limit(run_command):
    result = run_command(
        "thread_cliff",
        "--thread-limit",
        "4",
        "--levels",
        "2,8",
        "--hold-ms",
        str(HOLD_MS),
        "--samples",
        "3",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    below, above = figures["levels"]
    assert figures["cliff_at"] == 8
    assert below["trivial_p50_ms"] * 5 < above["trivial_p50_ms"]
    # async routes need no thread: /health stays fast at both levels
    assert max(below["health_p50_ms"], above["health_p50_ms"]) < HOLD_MS / 4


def test_more_threads_than_slow_requests_means_no_cliff():
    with serve(create_app(ExperimentSettings(thread_limit=16))) as url:
        rows = asyncio.run(measure_cliff(url, [8], hold_ms=HOLD_MS, samples=3))
    assert find_cliff(rows, HOLD_MS) is None
    assert rows[0]["slow_errors"] == 0


def test_a_level_of_zero_is_a_usage_error(run_command):
    result = run_command("thread_cliff", "--levels", "0,8")
    assert result.returncode == 2
    assert "integers >= 1" in result.stderr
