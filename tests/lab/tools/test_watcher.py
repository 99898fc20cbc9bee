"""The watcher's sampler: the largest lag read from the histogram, rows marked "no answer" while the API hangs,
a recording's peaks and chart (what scripts.compare and scripts.capacity draw), and what the watchdog saw, read
from its records' fields."""

import asyncio
import dataclasses
import logging
import socket
import threading
import time
from contextlib import ExitStack

import httpx
import pytest

from scripts.toolkit.measure.held_series import NO_ANSWER_S, peaks, record_tick_s, watching_in_thread
from scripts.toolkit.measure.rates import GAUGES, interval_figures, lag_between, read_scrape, watchdog_lines
from scripts.toolkit.processes import free_port
from scripts.toolkit.reports.held_chart import draw_held
from scripts.toolkit.running.apis import WatchdogRecords
from scripts.toolkit.running.stack import Stack
from ticket_api.instruments.watchdog import LoopWatchdog

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
    assert lag_between(before, scrape(quiet + [0.0003] * 10))["largest_s"] < 0.001  # idle: well under a millisecond
    one_blocked = scrape(quiet + [0.0002] * 12 + [2.2])  # one blocked ticket among quick heartbeats
    assert lag_between(before, one_blocked)["largest_s"] == pytest.approx(2.2, abs=0.01)
    assert lag_between(before, scrape(quiet + [2.2, 2.3]))["largest_s"] == pytest.approx(
        2.25
    )  # two: their mean, in the bucket
    assert lag_between(before, scrape(quiet + [9.5]))["largest_s"] == pytest.approx(
        9.5
    )  # above the last bound: the mean
    assert lag_between(before, before)["largest_s"] == 0.0  # no heartbeat in between


def two_workers(lags: dict[str, list[float]]):
    """A /metrics reading of two workers, each one's lag histogram labelled with its pid."""
    lines = [f"# TYPE {LAG} histogram"]
    for pid, observations in lags.items():
        lines += [
            f'{LAG}_bucket{{le="{bound}",pid="{pid}"}} {sum(value <= float(bound) for value in observations)}'
            for bound in BOUNDS
        ]
        lines += [f'{LAG}_count{{pid="{pid}"}} {len(observations)}', f'{LAG}_sum{{pid="{pid}"}} {sum(observations)}']
    return read_scrape(httpx.Response(200, text="\n".join(lines) + "\n"))


def test_with_two_workers_each_loop_has_its_own_lag_and_a_blocked_one_stands_out(tmp_path):
    quiet = [0.0004] * 50
    before = two_workers({"101": quiet, "102": quiet})
    after = two_workers({"101": quiet + [0.0003] * 10, "102": quiet + [0.0002] * 5 + [2.2]})
    figures = interval_figures(before, before, after)
    assert figures["lag_s_by_worker"]["101"] < 0.001
    assert figures["lag_s_by_worker"]["102"] == pytest.approx(2.2, abs=0.01)
    assert figures["lag_s"] == figures["lag_s_by_worker"]["102"]  # the server's largest: the blocked worker's
    rows = [a_row(t, lag_s_by_worker={"101": 0.001, "102": lag}) for t, lag in ((0.5, 0.001), (1.0, 2.2))]
    held = {"tick_s": 0.5, "header": {}, "rows": rows, "peaks": peaks(rows, 0.5)}
    draw_held(held, str(tmp_path / "held.svg"), "two workers")
    svg = (tmp_path / "held.svg").read_text()
    assert "worker 101" in svg and "worker 102" in svg  # one lag line per worker


def a_reading(at: float, lent: float, created: float):
    """A /metrics reading, answered at `at`, of the pool's connections lent and the tickets created so far."""
    text = (
        "# TYPE ticket_api_db_pool_lent counter\n"
        f"ticket_api_db_pool_lent_total {lent}\n"
        "# TYPE ticket_api_tickets counter\n"
        f'ticket_api_tickets_total{{outcome="created"}} {created}\n'
    )
    return dataclasses.replace(read_scrape(httpx.Response(200, text=text)), at=at)


def test_connections_lent_between_two_looks_are_seen_though_none_was_in_use_at_either():
    oldest, before, after = a_reading(10.0, 20, 4), a_reading(11.5, 24, 4), a_reading(12.0, 32, 8)
    figures = interval_figures(before, oldest, after)
    assert figures["db_lent_per_s"] == 16  # four checks and four saves in the half second since the previous look
    assert figures["tickets_per_s"] == {"created": 2.0}  # 4 tickets over the 2 s since the oldest reading
    restarted = interval_figures(before, oldest, a_reading(12.0, 3, 1))
    assert restarted["db_lent_per_s"] == 6 and restarted["tickets_per_s"] == {"created": 0.5}  # counted from 0
    assert interval_figures(scrape([]), scrape([]), scrape([]))["db_lent_per_s"] is None  # an API without the counter


@pytest.mark.timing
def test_rows_say_no_answer_while_the_api_hangs_or_is_down():
    with socket.socket() as hanging:  # accepts connections, never answers
        hanging.bind(("127.0.0.1", 0))
        hanging.listen()
        api = f"http://127.0.0.1:{hanging.getsockname()[1]}"
        with watching_in_thread(api, f"http://127.0.0.1:{free_port()}") as watcher:
            time.sleep(2.5)
        rows = watcher.rows()
    assert len(rows) >= 6  # five rows a second; a busy machine delayed the first to 0.6 s
    late = [row for row in rows if row["t"] > NO_ANSWER_S + 0.2]
    assert late and all(not row["api_answers"] for row in late)
    assert late[-1]["health_s"] > 1.0  # how long /health has waited so far
    assert all(row["threads_borrowed"] is None and row["sim_in_flight"] is None for row in late)


def test_a_watcher_in_a_thread_stops_with_its_block():
    with watching_in_thread(f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}") as watcher:
        deadline = time.monotonic() + 30  # a busy machine starts the thread late: wait for its rows, not a set time
        while len(watcher.rows()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    rows = watcher.rows()
    assert len(rows) >= 2 and all(row["health_s"] is None for row in rows)  # nothing listens: down, not waiting
    time.sleep(0.3)
    assert watcher.rows() == rows  # stopped
    assert not [thread for thread in threading.enumerate() if thread.name == "watcher"]


def a_row(t: float, answers: bool = True, **values) -> dict:
    """One row as the watcher makes it: an idle API unless `values` say otherwise."""
    row = {"t": t, "health_s": 0.002, "api_answers": True, "lag_s": 0.003, "tickets_per_s": {"created": 0.0}}
    row |= dict.fromkeys(GAUGES, 0.0) | {"threads_total": 40.0, "db_max": 10.0, "db_lent_per_s": 0.0}
    row |= {"sim_in_flight": 0, "quota_limit": 0, "quota_remaining": None}
    if not answers:  # the API's own gauges cannot be read while it does not answer
        row |= dict.fromkeys(GAUGES) | {"api_answers": False, "health_s": t - 0.5, "lag_s": 2.2, "db_lent_per_s": None}
    return row | values


def test_a_recording_keeps_its_peaks_and_draws_them_with_the_silence_shaded(tmp_path):
    rows = [
        a_row(0.5, db_lent_per_s=4.0),
        a_row(1.0, threads_borrowed=4.0, db_in_use=4.0, api_in_flight=4.0, sim_in_flight=4),
    ]
    rows += [a_row(t, answers=False, sim_in_flight=1) for t in (1.5, 2.0, 2.5)]
    rows += [a_row(3.0, tickets_per_s={"created": 1.5, "db_busy": 0.5})]
    held = {"tick_s": 0.5, "header": {"event_loop": "asyncio", "thread_limit": "40"}, "rows": rows}
    held["peaks"] = peaks(rows, 0.5)
    assert held["peaks"]["threads_borrowed_max"] == 4.0 and held["peaks"]["sim_in_flight_max"] == 4
    assert (
        held["peaks"]["lag_s_max"] == 2.2
        and held["peaks"]["no_answer_s"] == 1.5
        and held["peaks"]["db_lent_per_s_max"] == 4
    )
    assert held["peaks"]["created_per_s_max"] == 1.5 and held["peaks"]["health_s_max"] == 2.0
    draw_held(held, str(tmp_path / "held.svg"), "INTAKE_MODE=thread, a test")
    svg = (tmp_path / "held.svg").read_text()
    assert "What the server held: INTAKE_MODE=thread" in svg and "THREAD_LIMIT 40" in svg
    assert "no answer for 1.5 s" in svg and "at most 4 of 40" in svg and "db_busy" in svg
    assert "DB connections lent per second: at most 4" in svg
    assert "simulator quota" not in svg  # the quota's panel only when the quota is on


@pytest.mark.timing
def test_a_faster_simulator_is_recorded_more_often_down_to_a_tenth_of_a_second():
    assert (record_tick_s(1), record_tick_s(0.5), record_tick_s(0.05), record_tick_s(3)) == (0.5, 0.25, 0.1, 0.5)


async def blocks_the_loop(seconds: float) -> None:
    time.sleep(seconds)  # the blocking call the watchdog names


def test_the_watchdogs_fields_of_a_window_are_read_back_as_values_beside_its_unchanged_line(tmp_path):
    log = tmp_path / "api.log"
    watchdog_logger = logging.getLogger("ticket_api.watchdog")

    async def blocked(times: list[float]) -> None:
        watchdog = LoopWatchdog(100)
        watchdog.start()
        for seconds in times:
            await asyncio.sleep(0.1)
            await blocks_the_loop(seconds)
        await watchdog.stop()

    with open(log, "w") as stream:
        handler = WatchdogRecords(stream)
        watchdog_logger.addHandler(handler)
        try:
            asyncio.run(blocked([0.5]))  # before the window
            stream.flush()
            start = log.stat().st_size
            watchdog_logger.warning("a line without the watchdog's fields")
            asyncio.run(blocked([0.3, 0.6]))
        finally:
            watchdog_logger.removeHandler(handler)
    found = watchdog_lines(log, start, log.stat().st_size)
    assert found["lines"] == 2 and found["longest_ms"] >= 100, found  # once a stall, as it passes the threshold
    assert (
        found["most_named"].startswith("tests/lab/tools/test_watcher.py:")
        and "time.sleep(seconds)" in found["most_named"]
    )


def test_an_api_the_lab_starts_hands_over_the_watchdogs_fields_and_still_logs_its_line(database_url, tmp_path):
    with ExitStack() as resources:
        stack = Stack(resources, speed=0.2, log_dir=tmp_path)
        stack.dsn = database_url
        with stack.api("blocking", env={"LOOP_WATCHDOG_MS": "100"}) as api:
            start = api.log_path.stat().st_size
            ticket = {"customer_id": 1, "subject": "s", "body": "b"}
            assert httpx.post(f"{api.url}/v1/tickets", json=ticket, timeout=30).status_code == 201
            time.sleep(0.2)  # the watchdog's thread looks every 50 ms
            end = api.log_path.stat().st_size
    found = watchdog_lines(api.log_path, start, end)
    lines = [line for line in api.log_path.read_text().splitlines() if "event loop blocked for" in line]
    assert found["lines"] == len(lines) >= 1 and found["longest_ms"] >= 100
    assert all(line.startswith("WARNING ticket_api.watchdog: event loop blocked for ") for line in lines)
    assert found["most_named"].startswith("ticket_api/intake.py:")  # blocking mode's do_ai_work, as the lesson says
