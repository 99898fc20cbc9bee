"""The two AI endpoints: POST /v1/chat/completions and POST /v1/embeddings.

A call goes: check the body -> quota (chat only) -> fault -> pick a recorded call -> wait its
latency without blocking the event loop -> answer.
"""

import asyncio
import contextlib
import math
import time

import orjson

from simulator import content
from simulator.asgi import ClientWatch, Request, send_json
from simulator.embeddings import embed_text, to_base64
from simulator.errors import RateLimited, SimulatedServerError, SimulatedUnavailable, SimulatorStopping
from simulator.faults import FORCED_RETRY_AFTER_S, forced_fault
from simulator.replay import RecordedCall
from simulator.simulation import Simulation, Wait
from simulator.sse import stream_answer
from simulator.validate import ChatCall, EmbeddingsCall, parse_chat, parse_embeddings, parse_json_object

# Batches above this many characters are embedded in a worker thread, so that one huge request
# cannot hold the event loop, and with it every other waiting call, for tens of milliseconds.
INLINE_EMBEDDING_CHARS = 20_000


async def handle_chat(sim: Simulation, request: Request) -> None:
    """Answer a chat completion, plain or streamed, after the replayed delay."""
    chat = parse_chat(parse_json_object(await request.body()), request.headers.get(b"x-sim-operation"))
    forced = forced_fault(request.headers.get(b"x-sim-fault"))
    api_key = request.bearer_token()
    # A forced 429 is refused anyway, so it only looks at the quota and counts nothing.
    verdict = sim.quota.peek(api_key) if forced == "rate_limit" else sim.quota.admit(api_key)
    quota_headers = verdict.headers() if verdict is not None else []
    if verdict is not None and not verdict.allowed:
        raise RateLimited(
            f"Rate limit reached for chat requests per min (RPM): limit {verdict.limit}. "
            f"Please try again in {math.ceil(verdict.retry_after_s)}s.",
            headers=quota_headers,
        )
    fault = sim.faults.pick(forced)
    raise_for_fault(fault, quota_headers)
    call = sim.replay.next_call(chat.operation)
    answer = chat_answer(chat, sim.settings.seed)
    usage = chat_usage(chat, call)
    with waiting_call(sim, request) as watch:
        wait = sim.plan_wait(call, fault)
        headers = quota_headers + simulation_headers(chat.operation, call, wait, fault)
        if chat.stream:
            base = {
                "id": sim.new_id("chatcmpl"),
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": chat.model,
                "system_fingerprint": "fp_simulator",
            }
            if not await stream_answer(
                request.send,
                watch,
                request.received_at,
                wait,
                base,
                answer,
                usage if chat.include_usage else None,
                headers,
            ):
                raise_if_stopping(sim)
        elif await watch.wait_until(request.received_at + wait.total_s):
            await send_json(request.send, 200, completion_body(sim, chat.model, answer, usage), headers)
        else:
            raise_if_stopping(sim)


async def handle_embeddings(sim: Simulation, request: Request) -> None:
    """Answer an embeddings call after the replayed delay; embeddings do not count against the quota."""
    embeddings = parse_embeddings(parse_json_object(await request.body()))
    fault = sim.faults.pick(forced_fault(request.headers.get(b"x-sim-fault")))
    raise_for_fault(fault, [])
    call = sim.replay.next_call("embed")
    with waiting_call(sim, request) as watch:
        wait = sim.plan_wait(call, fault)
        # Computed before the wait, so the vectors' own time is part of the replayed latency.
        if sum(map(len, embeddings.inputs)) > INLINE_EMBEDDING_CHARS:
            body = await asyncio.to_thread(embeddings_body, embeddings)
        else:
            body = embeddings_body(embeddings)
        if await watch.wait_until(request.received_at + wait.total_s):
            await send_json(request.send, 200, body, simulation_headers("embed", call, wait, fault))
        else:
            raise_if_stopping(sim)


@contextlib.contextmanager
def waiting_call(sim: Simulation, request: Request):
    """Count the call as in flight (for --slowdown) and watch its client until the answer is sent."""
    sim.in_flight += 1
    try:
        yield ClientWatch(request.receive, sim.stop_signal)
    finally:
        sim.in_flight -= 1


def raise_if_stopping(sim: Simulation) -> None:
    """A wait cut short by the server stopping (not by the client leaving) answers 503."""
    if sim.stop_signal.is_set:
        raise SimulatorStopping("The simulator stopped before this call's delay ended.")


def raise_for_fault(fault: str | None, quota_headers: list) -> None:
    """Turn an error-type fault into its error response; slow and hang only change the wait."""
    if fault == "error":
        raise SimulatedServerError(
            "The server had an error while processing your request (simulated).", headers=quota_headers
        )
    if fault == "unavailable":
        raise SimulatedUnavailable("The server is overloaded or not ready yet (simulated).", headers=quota_headers)
    if fault == "rate_limit":
        retry = [(b"retry-after", str(FORCED_RETRY_AFTER_S).encode())]
        raise RateLimited(
            "Rate limit reached (simulated with X-Sim-Fault).",
            headers=[header for header in quota_headers if header[0] != b"retry-after"] + retry,
        )


def simulation_headers(operation: str, call: RecordedCall, wait: Wait, fault: str | None) -> list:
    """x-sim-* headers that show what was replayed: the operation, the recorded and the applied delay."""
    headers = [
        (b"x-sim-operation", operation.encode()),
        (b"x-sim-replayed-ms", f"{call.latency_ms:.1f}".encode()),
        (b"x-sim-delay-ms", f"{wait.total_s * 1000:.3f}".encode()),
    ]
    if fault is not None:
        headers.append((b"x-sim-fault", fault.encode()))
    return headers


def chat_answer(chat: ChatCall, seed: int) -> str:
    """The message content: classification JSON for classify, a support reply for draft."""
    if chat.operation == "classify":
        return orjson.dumps(content.classify_text(chat.user_text, seed, chat.categories, chat.priorities)).decode()
    return content.draft_reply(chat.user_text, seed)


def chat_usage(chat: ChatCall, call: RecordedCall) -> dict:
    """Token counts: the prompt estimated (4 characters a token, 4 more per message), the completion as recorded."""
    prompt_tokens = content.estimate_tokens(chat.prompt_text) + 4 * chat.message_count
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": call.completion_tokens,
        "total_tokens": prompt_tokens + call.completion_tokens,
    }


def completion_body(sim: Simulation, model: str, answer: str, usage: dict) -> dict:
    """A chat.completion object in OpenAI's shape, echoing the requested model."""
    return {
        "id": sim.new_id("chatcmpl"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
        "system_fingerprint": "fp_simulator",
    }


def embeddings_body(embeddings: EmbeddingsCall) -> bytes:
    """The serialised embeddings list (floats, or base64 float32 as the openai client asks by default)."""
    data = []
    for index, text in enumerate(embeddings.inputs):
        vector = embed_text(text, embeddings.dimensions)
        data.append(
            {"object": "embedding", "index": index, "embedding": to_base64(vector) if embeddings.base64 else vector}
        )
    prompt_tokens = sum(content.estimate_tokens(text) for text in embeddings.inputs)
    return orjson.dumps(
        {
            "object": "list",
            "data": data,
            "model": embeddings.model,
            "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
        }
    )
