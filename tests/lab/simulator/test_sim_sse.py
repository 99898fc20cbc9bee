"""Streaming: server-sent event framing, chunk objects, usage, and the pacing of the recorded call."""

import json
import statistics
import time

import pytest

from simulator.sse import MAX_CONTENT_CHUNKS, split_content
from tests.lab.simulator.sim_testing import chat_body, recorded_call, write_recording

LATENCY_MS, TTFT_MS = 400.0, 120.0


@pytest.fixture(scope="module")
def paced_sim(server_factory, tmp_path_factory):
    """A simulator at real speed whose every chat call takes 400 ms, the first token at 120 ms."""
    path = tmp_path_factory.mktemp("sse") / "flat.jsonl"
    write_recording(
        path,
        [
            recorded_call("classify", LATENCY_MS, TTFT_MS),
            recorded_call("draft", LATENCY_MS, TTFT_MS),
            recorded_call("embed", 50.0),
        ],
    )
    return server_factory("--recording", str(path), "--speed", "1", "--quota", "0", "--seed", "4")


def stream_events(sim, body: dict) -> tuple[list[tuple[float, str]], dict]:
    """POST a streaming chat call; return (seconds since sending, event data) pairs and the headers."""
    events = []
    with sim.client() as client:
        started = time.perf_counter()
        with client.stream("POST", "/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            buffer = ""
            for text in response.iter_text():
                buffer += text
                *complete, buffer = buffer.split("\n\n")
                for event in complete:
                    events.append((time.perf_counter() - started, event))
            assert buffer == ""  # nothing after the last blank line
            return events, response.headers


def test_events_are_framed_and_end_with_done(paced_sim):
    events, headers = stream_events(paced_sim, chat_body("draft", stream=True))
    assert headers["content-type"].startswith("text/event-stream")
    assert all(data.startswith("data: ") for _, data in events)
    assert events[-1][1] == "data: [DONE]"
    chunks = [json.loads(data[len("data: ") :]) for _, data in events[:-1]]
    assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
    assert len({chunk["id"] for chunk in chunks}) == 1
    assert {chunk["model"] for chunk in chunks} == {"gpt-4o-mini"}
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all("usage" not in chunk for chunk in chunks)


def test_the_streamed_text_equals_the_plain_answer(paced_sim):
    body = chat_body("draft", text="Subject: Lost parcel\n\nNothing arrived.")
    events, _ = stream_events(paced_sim, {**body, "stream": True})
    streamed = "".join(json.loads(data[6:])["choices"][0]["delta"].get("content", "") for _, data in events[:-1])
    with paced_sim.client() as client:
        plain = client.post("/v1/chat/completions", json=body).json()["choices"][0]["message"]["content"]
    assert streamed == plain
    assert "Lost parcel" in streamed


def test_include_usage_adds_a_usage_chunk_before_done(paced_sim):
    events, _ = stream_events(paced_sim, chat_body("classify", stream=True, stream_options={"include_usage": True}))
    usage_chunk = json.loads(events[-2][1][6:])
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] == 10  # as recorded
    assert usage_chunk["usage"]["total_tokens"] == usage_chunk["usage"]["prompt_tokens"] + 10


@pytest.mark.timing
def test_the_first_chunk_waits_the_ttft_and_the_rest_are_paced_evenly(paced_sim):
    events, _ = stream_events(paced_sim, chat_body("draft", stream=True))
    content_times = [moment for moment, data in events if '"content"' in data and '"delta":{}' not in data]
    first, last = content_times[0], content_times[-1]
    assert TTFT_MS / 1000 * 0.9 <= first < LATENCY_MS / 1000 * 0.75
    assert last >= LATENCY_MS / 1000 * 0.95
    gaps = [later - earlier for earlier, later in zip(content_times, content_times[1:], strict=False)]
    assert max(gaps) < 5 * statistics.median(gaps)  # even pacing, not a burst at the end


@pytest.mark.parametrize("text", ["", "one", "two words", "word " * 100, "a\n\nb  c\td"])
def test_split_content_keeps_every_character_in_order(text):
    pieces = split_content(text)
    assert "".join(pieces) == text
    assert 1 <= len(pieces) <= MAX_CONTENT_CHUNKS
