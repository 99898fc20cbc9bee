"""The bundled recording: generated from a seed, with the course's medians and a realistic spread."""

import json
import statistics

import pytest

from simulator.generate import MEDIAN_MS, generate_recording, render
from simulator.replay import OPERATIONS, load_recording
from simulator.settings import BUNDLED_RECORDING
from simulator.stats import operation_figures, percentile


@pytest.fixture(scope="module")
def bundled():
    """The bundled recording, loaded."""
    return load_recording(BUNDLED_RECORDING)


def test_the_bundled_file_is_exactly_what_the_generator_writes():
    assert BUNDLED_RECORDING.read_text(encoding="utf-8") == render(generate_recording())


def test_its_meta_line_says_it_is_generated_and_how():
    meta = json.loads(BUNDLED_RECORDING.read_text(encoding="utf-8").splitlines()[0])
    assert meta["kind"] == "meta" and meta["source"] == "generated"
    assert "not recorded" in meta["note"]
    assert meta["generator"].startswith("python -m simulator.generate")


def test_each_median_is_the_courses_and_a_ticket_takes_2210_ms(bundled):
    medians = {
        operation: statistics.median(call.latency_ms for call in bundled.calls[operation]) for operation in OPERATIONS
    }
    assert medians == {"classify": 910.0, "draft": 1100.0, "embed": 200.0} == MEDIAN_MS
    assert sum(medians.values()) == 2210.0


def test_the_spread_is_right_skewed_with_p95_about_one_and_a_half_medians(bundled):
    for row in operation_figures(bundled):
        assert 1.4 <= row["p95_ms"] / row["p50_ms"] <= 1.6, row
        fastest = min(call.latency_ms for call in bundled.calls[row["operation"]])
        assert row["p50_ms"] - fastest < row["p99_ms"] - row["p50_ms"]  # a longer tail on the slow side


def test_chat_calls_get_their_first_token_at_25_to_35_percent(bundled):
    for operation in ("classify", "draft"):
        shares = [call.ttft_ms / call.latency_ms for call in bundled.calls[operation]]
        assert 0.249 <= min(shares) and max(shares) <= 0.351
    assert all(call.ttft_ms is None for call in bundled.calls["embed"])


def test_another_seed_gives_another_file_with_the_same_medians():
    first, second = (generate_recording(seed=seed, calls_per_operation=51) for seed in (1, 2))
    assert render(first) != render(second)
    calls = [line for line in first if line.get("kind") != "meta"]
    for operation in OPERATIONS:
        latencies = [line["latency_ms"] for line in calls if line["operation"] == operation]
        assert statistics.median(latencies) == MEDIAN_MS[operation]
    with pytest.raises(ValueError, match="odd"):
        generate_recording(calls_per_operation=50)


def test_percentile_interpolates_like_numpy():
    assert percentile([1, 2, 3, 4], 0.5) == 2.5
    assert percentile([10, 20, 30], 0.0) == 10 and percentile([10, 20, 30], 1.0) == 30
    assert percentile([0, 100], 0.95) == pytest.approx(95.0)
