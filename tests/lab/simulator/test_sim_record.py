"""The recording proxy, tested with a simulator as the "real" upstream: record, then replay."""

import json
import statistics

import pytest

from simulator.replay import OPERATIONS, load_recording
from tests.lab.simulator.sim_testing import chat_body, post_many

CALLS = 25
UPSTREAM_SPEED = 0.1
# The replay stretches the recorded delays (36 ms for embed) so that its own HTTP, tens of milliseconds on a
# busy 2-core machine, stays small beside them; a replay that doubled its delays would still be far out.
REPLAY_SPEED = 4


def operation_call(operation: str) -> tuple[str, dict]:
    """The path and body of one call of the operation."""
    if operation == "embed":
        return "/v1/embeddings", {"model": "text-embedding-3-small", "input": "a ticket", "dimensions": 16}
    return "/v1/chat/completions", chat_body(operation)


@pytest.fixture(scope="module")
def recorded(server_factory, tmp_path_factory):
    """Calls made through the proxy to a simulator: (recording path, upstream applied delays per operation)."""
    upstream = server_factory("--speed", str(UPSTREAM_SPEED), "--quota", "0", "--seed", "3")
    path = tmp_path_factory.mktemp("record") / "recorded.jsonl"
    proxy = server_factory(
        "--out",
        str(path),
        module="simulator.record",
        env={"SIM_UPSTREAM_URL": upstream.api_url, "SIM_UPSTREAM_API_KEY": "sk-never-shown"},
    )
    assert "sk-never-shown" not in proxy.first_line
    applied = {}
    for operation in OPERATIONS:
        route, body = operation_call(operation)
        answers = post_many(proxy.base_url, route, [body] * CALLS, concurrency=4)
        assert {answer.status_code for answer in answers} == {200}
        applied[operation] = [float(answer.headers["x-sim-delay-ms"]) for answer in answers]
    with (
        proxy.client() as client,
        client.stream("POST", "/v1/chat/completions", json=chat_body("draft", stream=True)) as streamed,
    ):
        events = streamed.read().decode()
        assert "Printer" in events and events.endswith("data: [DONE]\n\n")
    failed = post_many(proxy.base_url, "/v1/chat/completions", [chat_body()], headers={"X-Sim-Fault": "error"})
    assert failed[0].status_code == 500  # passed on, and not recorded
    return path, applied


def test_the_proxy_writes_a_valid_recording_with_a_meta_line(recorded):
    path, _ = recorded
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["kind"] == "meta" and lines[0]["source"] == "recorded"
    assert "sk-never-shown" not in path.read_text()
    recording = load_recording(path)
    assert [len(recording.calls[operation]) for operation in OPERATIONS] == [CALLS, CALLS + 1, CALLS]
    streamed = [call for call in recording.calls["draft"] if call.ttft_ms is not None]
    assert len(streamed) == 1 and 0 < streamed[0].ttft_ms < streamed[0].latency_ms
    assert all(call.completion_tokens > 0 for call in recording.calls["draft"])


@pytest.mark.timing
def test_recorded_latencies_are_the_upstream_delays(recorded):
    path, applied = recorded
    recording = load_recording(path)
    for operation in OPERATIONS:
        recorded_median = statistics.median(call.latency_ms for call in recording.calls[operation][:CALLS])
        upstream_median = statistics.median(applied[operation])
        # The proxy's own time is part of what it records: milliseconds, tens of them on a busy 2-core machine.
        assert upstream_median <= recorded_median <= upstream_median * 1.25 + 25, operation


@pytest.mark.timing
def test_replaying_the_recording_gives_its_medians_back(recorded, server_factory):
    path, _ = recorded
    recording = load_recording(path)
    replay = server_factory(
        "--recording", str(path), "--mode", "sequence", "--speed", str(REPLAY_SPEED), "--quota", "0"
    )
    for operation in OPERATIONS:
        route, body = operation_call(operation)
        answers = post_many(replay.base_url, route, [body] * len(recording.calls[operation]), concurrency=4)
        replayed = sorted(float(answer.headers["x-sim-replayed-ms"]) for answer in answers)
        assert replayed == sorted(call.latency_ms for call in recording.calls[operation])
        observed_median = statistics.median(answer.elapsed.total_seconds() * 1000 for answer in answers)
        stretched_median = statistics.median(replayed) * REPLAY_SPEED
        assert 0.95 * stretched_median <= observed_median <= 1.25 * stretched_median + 25, operation
