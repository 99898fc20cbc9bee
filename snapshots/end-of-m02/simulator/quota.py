"""The chat quota: N requests per minute per API key, over a sliding window of real time.

Only chat completions count; embeddings do not. The window is never scaled by --speed: a
quota of 100 per minute stays 100 per minute however fast the replay runs.
"""

import collections
import dataclasses
import math
import time

WINDOW_S = 60.0


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaVerdict:
    """The answer to one call: allowed or not, and what the x-ratelimit headers say."""

    allowed: bool
    limit: int
    remaining: int
    retry_after_s: float
    reset_s: float

    def headers(self) -> list[tuple[bytes, bytes]]:
        """OpenAI's x-ratelimit-* request headers, plus Retry-After on a refusal."""
        headers = [
            (b"x-ratelimit-limit-requests", str(self.limit).encode()),
            (b"x-ratelimit-remaining-requests", str(self.remaining).encode()),
            (b"x-ratelimit-reset-requests", format_duration(self.reset_s).encode()),
        ]
        if not self.allowed:
            headers.append((b"retry-after", str(max(1, math.ceil(self.retry_after_s))).encode()))
        return headers


def format_duration(seconds: float) -> str:
    """A duration as OpenAI writes it in x-ratelimit-reset-*: "0s", "1.5s", "59.999s"."""
    return f"{round(seconds, 3):g}s"


class ChatQuota:
    """A sliding-window request counter per API key; a limit of 0 switches it off."""

    def __init__(self, requests_per_minute: int, window_s: float = WINDOW_S, clock=time.monotonic) -> None:
        self.requests_per_minute = requests_per_minute
        self.window_s = window_s
        self._clock = clock
        self._calls: dict[str, collections.deque] = {}

    @property
    def enabled(self) -> bool:
        """True while the quota limits anything."""
        return self.requests_per_minute > 0

    def admit(self, api_key: str) -> QuotaVerdict | None:
        """Count one call for this key if a slot is free; None while the quota is off."""
        return self._verdict(api_key, count=True)

    def peek(self, api_key: str) -> QuotaVerdict | None:
        """The key's current state, counting nothing (for answers that are refused anyway)."""
        return self._verdict(api_key, count=False)

    def lowest_remaining(self) -> int | None:
        """The fewest calls any key may still make in its window now (the limit if none called); None while off."""
        if not self.enabled:
            return None
        verdicts = [self.peek(api_key) for api_key in list(self._calls)]
        return min((verdict.remaining for verdict in verdicts if verdict), default=self.requests_per_minute)

    def reset(self) -> None:
        """Forget every counted call: every key starts with a full quota again."""
        self._calls.clear()

    def _verdict(self, api_key: str, count: bool) -> QuotaVerdict | None:
        """Drop calls older than the window, then decide."""
        if not self.enabled:
            return None
        now = self._clock()
        calls = self._calls.setdefault(api_key, collections.deque())
        while calls and calls[0] <= now - self.window_s:
            calls.popleft()
        limit = self.requests_per_minute
        allowed = len(calls) < limit
        if allowed and count:
            calls.append(now)
        # A slot frees when the oldest counted call leaves the window; all are free when the newest does.
        retry_after_s = calls[0] + self.window_s - now if len(calls) >= limit else 0.0
        reset_s = calls[-1] + self.window_s - now if calls else 0.0
        return QuotaVerdict(allowed, limit, max(0, limit - len(calls)), retry_after_s, reset_s)
