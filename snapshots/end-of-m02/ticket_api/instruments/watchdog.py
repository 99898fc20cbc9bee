"""The event-loop watchdog: names the line that blocks the loop, while it is still blocking.

A heartbeat task on the loop notes the time every 50 ms; a thread checks the note as often.
When the note is older than the threshold, the loop is stuck, and the loop thread's stack at
that moment holds the blocking call: the watchdog logs the line of our async code that made it.
"""

import asyncio
import inspect
import linecache
import logging
import sys
import threading
import time
import traceback
from pathlib import Path

from ticket_api import PROJECT_ROOT

log = logging.getLogger("ticket_api.watchdog")
HEARTBEAT_S = 0.05  # the reading's interval (one-blocking-call); each beat wakes the loop and the watching thread


def event_loop_name() -> str:
    """The running event loop's library: "asyncio" or "uvloop"."""
    return type(asyncio.get_running_loop()).__module__.split(".")[0]


def announce_event_loop() -> None:
    """Log which event loop runs the API ("asyncio" or "uvloop"), with a warning on uvloop."""
    name = event_loop_name()
    log.info("event loop: %s (%s)", name, type(asyncio.get_running_loop()).__name__)
    if name == "uvloop":
        # uvicorn takes uvloop whenever it is installed. On it, a waiting request can be read between
        # two blocked tickets, so INTAKE_MODE=blocking stalls /health for less time than the course measured.
        log.warning(
            "on uvloop, INTAKE_MODE=blocking's /health figures differ from the course's, measured on "
            "asyncio's own loop. To match them: python -m pip uninstall -y uvloop (uvicorn and fastapi dev "
            "then use asyncio's loop), or start the API with uvicorn ticket_api.main:app --loop asyncio"
        )


class LoopWatchdog:
    """Start with `start()` on the running loop, stop with `stop()`; `lag_ms` feeds /metrics."""

    def __init__(self, threshold_ms: int, on_lag=None):
        self.threshold_s = threshold_ms / 1000
        self.on_lag = on_lag or (lambda lag_s: None)
        self.stalls = 0
        self._beat = time.monotonic()
        self._stop = threading.Event()
        self._task: asyncio.Task | None = None
        self._thread: threading.Thread | None = None
        self._loop_thread_id = 0

    def start(self) -> None:
        """Start the heartbeat on the running loop and the watching thread (a threshold of 0 = only lag)."""
        self._loop_thread_id = threading.get_ident()
        self._beat = time.monotonic()
        self._task = asyncio.get_running_loop().create_task(self._heartbeat())
        if self.threshold_s > 0:
            self._thread = threading.Thread(target=self._watch, name="loop-watchdog", daemon=True)
            self._thread.start()

    async def stop(self) -> None:
        """Stop the heartbeat and the thread."""
        self._stop.set()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=1)

    async def _heartbeat(self) -> None:
        while True:
            before = time.monotonic()
            self._beat = before
            await asyncio.sleep(HEARTBEAT_S)
            self.on_lag(max(0.0, time.monotonic() - before - HEARTBEAT_S))

    def _watch(self) -> None:
        reported = None
        while not self._stop.wait(HEARTBEAT_S):
            beat = self._beat
            stalled = time.monotonic() - beat
            if stalled > self.threshold_s and reported != beat:
                reported = beat
                self.stalls += 1
                at = self._blocking_line()
                # The figures go with the record as fields too (logging's `extra`): a tool reads them, not the words.
                fields = {"blocked_ms": round(stalled * 1000), "blocked_at": at}
                log.warning("event loop blocked for %.0f ms so far, at %s", stalled * 1000, at, extra=fields)

    def _blocking_line(self) -> str:
        # sys._current_frames() is documented in CPython's `sys` module ("for internal and specialized purposes"):
        # each thread's current frame, so the loop thread's stack while it is blocked. The reading's own technique.
        frame = sys._current_frames().get(self._loop_thread_id)
        frames = [each for each, _ in traceback.walk_stack(frame)] if frame is not None else []  # innermost first
        ours = [each for each in frames if _in_project(each.f_code.co_filename)]
        # The culprit is the innermost coroutine of ours: the async code that called something that waits.
        culprit = next((each for each in ours if each.f_code.co_flags & inspect.CO_COROUTINE), None)
        culprit = culprit or next(iter(ours or frames), None)
        return _describe(culprit) if culprit is not None else "(unknown)"


def _describe(frame) -> str:
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    line = linecache.getline(filename, lineno).strip()
    return f"{_relative(filename)}:{lineno} in {frame.f_code.co_name}(): {line}"


def _in_project(filename: str) -> bool:
    path = Path(filename)
    return path.is_relative_to(PROJECT_ROOT) and ".venv" not in path.parts and "site-packages" not in path.parts


def _relative(filename: str) -> str:
    path = Path(filename)
    return str(path.relative_to(PROJECT_ROOT)) if path.is_relative_to(PROJECT_ROOT) else filename
