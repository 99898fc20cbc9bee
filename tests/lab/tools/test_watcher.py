"""The watcher's sampler: the largest lag read from the histogram, and rows marked "no answer" while the API hangs."""

import asyncio
import socket
import threading
import time

import httpx
import pytest

from scripts.toolkit.processes import free_port
from scripts.toolkit.watcher import NO_ANSWER_S, largest_lag_s, read_scrape, watching, watching_in_thread

LAG = "ticket_api_event_loop_lag_seconds"
BOUNDS = ("0.001", "0.005", "0.01", "1.0", "2.5", "+Inf")


def scrape(observations: list[float]):
    """A /metrics reading whose lag histogram holds these observations."""
    lines = [f'{LAG}_bucket{{le="{bound}"}} {sum(value <= float(bound) for value in observations)}' for bound in BOUNDS]
    lines += [f"{LAG}_count {len(observations)}", f"{LAG}_sum {sum(observations)}"]
    text = f"# TYPE {LAG} histogram\n" + "\n".join(lines) + "\n"
    return read_scrape(httpx.Response(200, text=text))


def test_the_largest_lag_is_read_from_the_highest_bucket_that_grew():
    quiet = [0.0004] * 50
    before = scrape(quiet)
    assert largest_lag_s(before, scrape(quiet + [0.0003] * 10)) < 0.001  # idle: well under a millisecond
    one_blocked = scrape(quiet + [0.0002] * 12 + [2.2])  # one blocked ticket among quick heartbeats
    assert largest_lag_s(before, one_blocked) == pytest.approx(2.2, abs=0.01)
    assert largest_lag_s(before, scrape(quiet + [2.2, 2.3])) == pytest.approx(2.25)  # two: their mean, in the bucket
    assert largest_lag_s(before, scrape(quiet + [9.5])) == pytest.approx(9.5)  # above the last bound: the mean
    assert largest_lag_s(before, before) == 0.0  # no heartbeat in between


def test_rows_say_no_answer_while_the_api_hangs_or_is_down():
    async def watch_a_hanging_api() -> list[dict]:
        with socket.socket() as hanging:  # accepts connections, never answers
            hanging.bind(("127.0.0.1", 0))
            hanging.listen()
            api = f"http://127.0.0.1:{hanging.getsockname()[1]}"
            async with watching(api, f"http://127.0.0.1:{free_port()}") as watcher:
                await asyncio.sleep(1.5)
                return watcher.rows()

    rows = asyncio.run(watch_a_hanging_api())
    assert len(rows) >= 6  # five rows a second
    late = [row for row in rows if row["t"] > NO_ANSWER_S + 0.2]
    assert late and all(not row["api_answers"] for row in late)
    assert late[-1]["health_s"] > 1.0  # how long /health has waited so far
    assert all(row["threads_borrowed"] is None and row["sim_in_flight"] is None for row in late)


def test_a_watcher_in_a_thread_stops_with_its_block():
    with watching_in_thread(f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}") as watcher:
        time.sleep(0.7)
    rows = watcher.rows()
    assert len(rows) >= 2 and all(row["health_s"] is None for row in rows)  # nothing listens: down, not waiting
    time.sleep(0.3)
    assert watcher.rows() == rows  # stopped
    assert not [thread for thread in threading.enumerate() if thread.name == "watcher"]
