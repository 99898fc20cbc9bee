"""Watching a run from a thread of its own, while the run blocks this one (a Locust run, a lesson command, a load on
this thread's event loop): a coroutine on an event loop of its own, and the lesson's polling (`every`, in
scripts/stall.py) run there.
"""

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from scripts.stall import every
from scripts.toolkit.cli import progress

STOP_WITHIN_S = 30  # a step under way when the block ends: a request, a query, each with its own timeout


class WatchFailed(Exception):
    """What ran in the thread raised an exception (its __cause__): raised once the block has ended."""


@contextmanager
def in_thread(
    run: Callable[[asyncio.Event], Coroutine[Any, Any, object]], name: str, cut_short: bool = True
) -> Iterator[None]:
    """`run(stop)` on a thread and event loop of its own while the block runs; at the block's end `stop` is set (with
    `cut_short`, or when the block raised; else `run` goes on to its own end) and the thread joined. WatchFailed after
    the block if `run` raised or did not stop; if the block raised, a progress line says so."""
    failures: list[Exception] = []
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    def run_to_its_end() -> None:
        try:
            loop.run_until_complete(run(stop))
        except Exception as exc:  # handed to the block's thread
            failures.append(exc)

    def stopped(cut_short: bool) -> str | None:
        """Stop (or wait for) the thread; what went wrong there, if anything."""
        if cut_short:
            loop.call_soon_threadsafe(stop.set)
        thread.join(STOP_WITHIN_S if cut_short else None)
        if thread.is_alive():
            return f"{name}: did not stop within {STOP_WITHIN_S} s"  # its step under way hangs; a daemon, left
        loop.close()
        return f"{name}: {type(failures[0]).__name__}: {failures[0]}" if failures else None

    thread = threading.Thread(target=run_to_its_end, name=name, daemon=True)
    thread.start()
    try:
        yield
    except BaseException:  # an error, Ctrl+C: what runs there is not waited for beyond its step under way
        if (why := stopped(cut_short=True)) is not None:
            progress(f"meanwhile, {why}")  # the block's own error goes on; this one is not lost
        raise
    if (why := stopped(cut_short)) is not None:
        raise WatchFailed(why) from (failures[0] if failures else None)


def polled_in_thread(
    action: Callable[[], bool | None],
    interval_s: float,
    name: str,
    paced: bool = False,
    start_at: float | None = None,
    cut_short: bool = True,
) -> AbstractContextManager[None]:
    """`action()` every `interval_s` while the block runs, from `start_at` (a time.perf_counter(), if given) on a thread
    of its own: stall.every's polling, until the block ends (`cut_short`) or the action returns True."""

    async def act() -> bool | None:
        return action()  # it may block: this loop is the thread's own

    async def poll(stop: asyncio.Event) -> None:
        if start_at is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), max(0.0, start_at - time.perf_counter()))
        await every(interval_s, stop, act, paced)

    return in_thread(poll, name, cut_short)
