"""A fake AI provider with the real one's interface: `call` waits (sleeps), `acall` is awaited."""

import asyncio
import hashlib
import json
import math
import time

from ticket_api.ai import EMBEDDING_DIMENSIONS


class FakeProvider:
    """Answers like the simulator after `delay_s` per call; give `error` to make every call raise it."""

    def __init__(self, delay_s: float = 0.2, error: Exception | None = None):
        self.delay_s = delay_s
        self.error = error
        self.calls: list[str] = []
        self.in_flight = 0

    def call(self, path: str, body: dict) -> tuple[dict, float]:
        """Like Provider.call: blocks the calling thread for `delay_s`."""
        started = time.perf_counter()
        self.calls.append(path)
        self.in_flight += 1
        try:
            time.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        return self._answer(path, body), (time.perf_counter() - started) * 1000

    async def acall(self, path: str, body: dict) -> tuple[dict, float]:
        """Like Provider.acall: awaits `delay_s`, so the event loop stays free."""
        started = time.perf_counter()
        self.calls.append(path)
        self.in_flight += 1
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        return self._answer(path, body), (time.perf_counter() - started) * 1000

    async def aclose(self) -> None:
        """Nothing to close."""

    def _answer(self, path: str, body: dict) -> dict:
        if self.error is not None:
            raise self.error
        if path == "/embeddings":
            return {"model": body["model"], "data": [{"index": 0, "embedding": fake_embedding(body["input"])}]}
        operation = body.get("metadata", {}).get("operation")
        subject = body["messages"][-1]["content"].splitlines()[0].removeprefix("Subject: ")
        if operation == "classify":
            content = json.dumps({"category": "technical", "priority": "normal"})
        else:
            content = f'Hi, thanks for writing about "{subject}". We are on it and will reply soon.'
        return {"model": body["model"], "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}


def fake_embedding(text: str) -> list[float]:
    """A unit vector that depends only on the text."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = [digest[i % len(digest)] - 127.5 + i % 7 for i in range(EMBEDDING_DIMENSIONS)]
    norm = math.sqrt(sum(x * x for x in raw))
    return [x / norm for x in raw]
