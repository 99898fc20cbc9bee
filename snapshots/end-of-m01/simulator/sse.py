"""Streaming chat answers as server-sent events, paced like the recorded call.

The first chunk leaves after the time to first token; the other pieces of the answer follow
evenly spread over the rest of the call's latency, then `data: [DONE]`.
"""

import re

import orjson

from simulator.asgi import ClientWatch
from simulator.simulation import Wait

MAX_CONTENT_CHUNKS = 20  # more chunks would only add send() calls without teaching anything new
SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
DONE = b"data: [DONE]\n\n"
END_OF_BODY = {"type": "http.response.body", "body": b"", "more_body": False}
PIECE = re.compile(r"\S+\s*|\s+")


def split_content(text: str, pieces: int = MAX_CONTENT_CHUNKS) -> list[str]:
    """Cut the text into at most `pieces` consecutive parts at word boundaries; joined, they give the text back."""
    words = PIECE.findall(text) or [""]
    count = min(pieces, len(words))
    return ["".join(words[len(words) * i // count : len(words) * (i + 1) // count]) for i in range(count)]


def event(payload: dict) -> bytes:
    """One server-sent event carrying a JSON payload."""
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def chunk(base: dict, delta: dict, finish_reason: str | None = None) -> bytes:
    """A chat.completion.chunk event with one choice."""
    return event({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]})


async def stream_answer(
    send, watch: ClientWatch, started: float, wait: Wait, base: dict, content: str, usage: dict | None, headers: list
) -> bool:
    """Send the answer as SSE: first piece wait.ttft_s after `started`, the rest paced evenly up to wait.total_s.

    Returns False if the wait for the first token was cut short (nothing sent); a stream cut
    later (client gone, server stopping) is ended where it is.
    """
    if not await watch.wait_until(started + wait.ttft_s):
        return False
    pieces = split_content(content)
    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS + headers})
    await send(
        {
            "type": "http.response.body",
            "body": chunk(base, {"role": "assistant", "content": pieces[0]}),
            "more_body": True,
        }
    )
    gap_s = (wait.total_s - wait.ttft_s) / max(1, len(pieces) - 1)
    for number, piece in enumerate(pieces[1:], start=1):
        # Each piece has a fixed moment from the start, so small sleep overruns do not add up.
        if not await watch.wait_until(started + wait.ttft_s + number * gap_s):
            await send(END_OF_BODY)
            return True
        await send({"type": "http.response.body", "body": chunk(base, {"content": piece}), "more_body": True})
    if len(pieces) == 1 and not await watch.wait_until(started + wait.total_s):
        await send(END_OF_BODY)
        return True
    tail = chunk(base, {}, finish_reason="stop")
    if usage is not None:
        tail += event({**base, "choices": [], "usage": usage})
    await send({"type": "http.response.body", "body": tail + DONE, "more_body": False})
    return True
