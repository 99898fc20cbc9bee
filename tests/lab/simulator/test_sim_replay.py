"""Recordings and latency replay: loading, sample and sequence modes, statistics over HTTP."""

import statistics
import time

import pytest

from simulator.replay import OPERATIONS, RecordingError, Replay, load_recording
from simulator.settings import BUNDLED_RECORDING
from tests.lab.simulator.sim_testing import chat_body, post_many, recorded_call, write_recording


def test_the_bundled_recording_loads_with_every_operation():
    recording = load_recording(BUNDLED_RECORDING)
    assert all(len(recording.calls[operation]) >= 200 for operation in OPERATIONS)
    assert recording.source() == "generated"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"operation": "summarise", "endpoint": "chat"}', "operation must be one of"),
        ('{"operation": "embed", "endpoint": "chat", "model": "m"}', "endpoint must be 'embeddings'"),
        ('{"operation": "draft", "endpoint": "chat", "model": "m", "latency_ms": -1}', "latency_ms"),
        (
            '{"operation": "draft", "endpoint": "chat", "model": "m", "latency_ms": 5, "prompt_tokens": 1.5}',
            "prompt_tokens",
        ),
        (
            '{"operation": "draft", "endpoint": "chat", "model": "m", "latency_ms": 5, "ttft_ms": 9, '
            '"prompt_tokens": 1, "completion_tokens": 1}',
            "ttft_ms must not exceed",
        ),
        ("[1, 2]", "JSON object"),
        ("{not json", "line 2"),
    ],
)
def test_a_bad_line_is_refused_with_its_line_number(tmp_path, line, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"kind": "meta"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(RecordingError) as caught:
        load_recording(path)
    assert "line 2" in str(caught.value)
    assert problem in str(caught.value)


def test_a_recording_without_an_operation_is_refused(tmp_path):
    path = write_recording(tmp_path / "partial.jsonl", [recorded_call("classify", 10), recorded_call("draft", 10)])
    with pytest.raises(RecordingError, match="no calls for: embed"):
        load_recording(path)


def test_sequence_mode_replays_in_recorded_order_and_loops(tmp_path):
    path = write_recording(
        tmp_path / "r.jsonl",
        [recorded_call("classify", ms) for ms in (10, 20, 30)] + [recorded_call("draft", 7), recorded_call("embed", 5)],
    )
    replay = Replay(load_recording(path), "sequence", seed=0)
    assert [replay.next_call("classify").latency_ms for _ in range(7)] == [10, 20, 30, 10, 20, 30, 10]


def test_sample_mode_is_fixed_by_the_seed():
    recording = load_recording(BUNDLED_RECORDING)
    first, again, other = (Replay(recording, "sample", seed) for seed in (1, 1, 2))
    draws = [first.next_call("draft").latency_ms for _ in range(50)]
    assert draws == [again.next_call("draft").latency_ms for _ in range(50)]
    assert draws != [other.next_call("draft").latency_ms for _ in range(50)]


def test_sampled_medians_over_http_match_the_recording(server_factory):
    """Many draws at --speed 0.01: each operation's replayed median is within 5% of the recording's."""
    # A simulator of its own, so the draws do not depend on what other tests asked before.
    sim = server_factory("--speed", "0.01", "--quota", "0", "--seed", "11")
    recording = load_recording(BUNDLED_RECORDING)
    for operation in OPERATIONS:
        if operation == "embed":
            body = {"model": "e", "input": "hi", "dimensions": 8}
            responses = post_many(sim.base_url, "/v1/embeddings", [body] * 301)
        else:
            responses = post_many(sim.base_url, "/v1/chat/completions", [chat_body(operation)] * 301)
        assert {response.status_code for response in responses} == {200}
        replayed = [float(response.headers["x-sim-replayed-ms"]) for response in responses]
        recorded_median = statistics.median(call.latency_ms for call in recording.calls[operation])
        assert abs(statistics.median(replayed) - recorded_median) <= 0.05 * recorded_median, operation


@pytest.mark.timing
def test_each_call_waits_its_scaled_delay(server_factory):
    """The wall time of a call is its applied delay (recorded x speed), never much less, not much more."""
    # At speed 0.1 a classify waits about 90 ms: a busy machine's few milliseconds of HTTP are a small part of it
    # (at 0.01 the 9 ms waits read 2.2 times as long under load).
    ratios = []
    with server_factory("--speed", "0.1", "--quota", "0", "--seed", "7").client() as http:
        for _ in range(30):
            started = time.perf_counter()
            response = http.post("/v1/chat/completions", json=chat_body("classify"))
            elapsed_ms = (time.perf_counter() - started) * 1000
            applied_ms = float(response.headers["x-sim-delay-ms"])
            assert applied_ms == pytest.approx(float(response.headers["x-sim-replayed-ms"]) * 0.1, abs=0.01)
            ratios.append(elapsed_ms / applied_ms)
    assert min(ratios) > 0.7  # timers may fire a little early, never by a third
    assert statistics.median(ratios) < 1.5  # twice the delay would be 2
