"""The event-loop watchdog: it names the line of async code that blocks the loop."""

import asyncio
import inspect
import logging
import time

from ticket_api.instruments.watchdog import LoopWatchdog


async def waits_the_wrong_way() -> None:
    time.sleep(0.4)  # the blocking call the watchdog must name


async def waits_the_right_way() -> None:
    await asyncio.sleep(0.4)


def line_of(function, text: str) -> int:
    """The number, in its file, of the first line of `function` that holds `text`."""
    lines, first = inspect.getsourcelines(function)
    return first + next(index for index, line in enumerate(lines) if text in line)


def run_with_watchdog(work, threshold_ms: int = 100) -> tuple[LoopWatchdog, list[float]]:
    lags: list[float] = []

    async def main() -> LoopWatchdog:
        watchdog = LoopWatchdog(threshold_ms, on_lag=lags.append)
        watchdog.start()
        await asyncio.sleep(0.05)
        await work()
        await asyncio.sleep(0.05)
        await watchdog.stop()
        return watchdog

    return asyncio.run(main()), lags


def test_a_blocking_call_is_logged_with_its_file_line_and_source(caplog):
    with caplog.at_level(logging.WARNING, logger="ticket_api.watchdog"):
        watchdog, _ = run_with_watchdog(waits_the_wrong_way)
    assert watchdog.stalls >= 1
    messages = [r.getMessage() for r in caplog.records if r.name == "ticket_api.watchdog"]
    line = line_of(waits_the_wrong_way, "time.sleep(0.4)")
    assert any(f"tests/test_watchdog.py:{line} in waits_the_wrong_way(): time.sleep(0.4)" in m for m in messages)


def test_awaiting_is_not_reported(caplog):
    with caplog.at_level(logging.WARNING, logger="ticket_api.watchdog"):
        watchdog, _ = run_with_watchdog(waits_the_right_way, threshold_ms=300)  # well above scheduling noise
    assert watchdog.stalls == 0
    assert not [r for r in caplog.records if r.name == "ticket_api.watchdog"]


def test_the_loop_lag_is_measured_even_without_reports():
    watchdog, lags = run_with_watchdog(waits_the_wrong_way, threshold_ms=0)
    assert watchdog.stalls == 0
    assert max(lags) > 0.3


def test_a_free_loop_has_little_lag():
    _, free = run_with_watchdog(waits_the_right_way, threshold_ms=0)
    _, blocked = run_with_watchdog(waits_the_wrong_way, threshold_ms=0)
    assert free and max(free) < 0.5 * max(blocked)
