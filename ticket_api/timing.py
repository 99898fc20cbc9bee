"""Where a request's time goes: the buckets db, ai and other, its query count and its provider calls."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

BUCKETS = ("db", "ai")


class Timer:
    """Per-request timer: `with timer("db"): ...` adds the block's time to the bucket `db`.

    Blocks nest: time spent in an inner block counts for the inner bucket only.
    """

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.spent_ms = dict.fromkeys(BUCKETS, 0.0)
        self.queries = 0
        self.provider_calls: list[tuple[float, float]] = []  # (start, end) on the perf_counter clock
        self._inner_ms = 0.0

    @contextmanager
    def __call__(self, bucket: str) -> Iterator[None]:
        started, inner_before = time.perf_counter(), self._inner_ms
        self._inner_ms = 0.0
        try:
            yield
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            self.spent_ms[bucket] += elapsed - self._inner_ms
            self._inner_ms = inner_before + elapsed

    def total_ms(self) -> float:
        """Milliseconds since the request started."""
        return (time.perf_counter() - self.started) * 1000

    def server_timing(self) -> str:
        """The buckets as a standard Server-Timing header value; `other` is what the buckets miss."""
        total = self.total_ms()
        other = max(0.0, total - sum(self.spent_ms.values()))
        parts = [f"{name};dur={ms:.1f}" for name, ms in self.spent_ms.items()]
        return ", ".join([*parts, f"other;dur={other:.1f}", f"total;dur={total:.1f}"])

    def provider_calls_header(self) -> str:
        """`start-end` of each provider call, in ms since the request started: `3.1-913.5, 915.0-2016.2, ...`."""
        return ", ".join(
            f"{(start - self.started) * 1000:.1f}-{(end - self.started) * 1000:.1f}"
            for start, end in self.provider_calls
        )


# Set by the request-log middleware; thread-pool calls see it too (run_in_threadpool copies the context).
current_timer: ContextVar[Timer | None] = ContextVar("current_timer", default=None)


def count_query() -> None:
    """Count one database query for the current request, if there is one."""
    timer = current_timer.get()
    if timer is not None:
        timer.queries += 1


def note_provider_call(started: float) -> None:
    """Note that a provider call of the current request ran from `started` (perf_counter) until now."""
    timer = current_timer.get()
    if timer is not None:
        timer.provider_calls.append((started, time.perf_counter()))
