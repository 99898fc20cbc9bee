"""What the server holds while it waits, several times a second: one home for the series that
`scripts.watch` shows live and `scripts.compare`/`scripts.capacity` draw after their runs.

Three probes run side by side, each with at most one request in flight: GET /health, timed here;
the API's GET /metrics; the simulator's GET /admin/stats. A probe still waiting is a probe without
an answer: its series get no value meanwhile, and /health's shows how long it has been waiting.
Every tick (0.2 s), one row takes the latest value of every series; the last WINDOW_S seconds are kept.
/health is asked twice a tick, the others once: 15 small requests a second to the API at the page's
0.2 s, 6 at a recording's 0.5 s (`recorded_in_thread`: scripts.compare and scripts.capacity).
"""

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from scripts.stall import HealthProbes, every, probe_health
from scripts.toolkit.measure.meanwhile import in_thread
from scripts.toolkit.measure.rates import (
    GAUGES,
    INTERVAL_KEYS,
    RATE_OVER_S,
    SIMULATOR_STATS,
    Row,
    Scrape,
    interval_figures,
    read_scrape,
    read_simulator_stats,
)

TICK_S = 0.2  # the page's; scripts.compare and scripts.capacity record every RECORD_TICK_S
RECORD_TICK_S = 0.5  # at the simulator's speed 1; shorter at a faster simulator (record_tick_s), 0.1 s at least
# A recording goes on a few ticks after its work: a stalled API's last lag and tickets/s come with
# the first /metrics answer after the stall, a moment after the work's own last answer.
LINGER_TICKS = 2
WINDOW_S = 60.0
NO_ANSWER_S = 0.5  # a probe waiting longer than this counts as "no answer"
TIMEOUT_S = 30.0  # a probe given up after this; the next one starts at once


@dataclass
class Probe:
    """One kind of GET, never two at once (`get`, polled): its last answer and whether it answers now."""

    client: httpx.AsyncClient
    url: str
    read: Callable[[httpx.Response], Any]
    answer: Any = field(default=None, init=False)  # what `read` made of the last answer; None after a failure
    sent_at: float | None = field(default=None, init=False)  # while a request is in flight

    def answers(self, now: float) -> bool:
        """True if the last request answered and none has been waiting longer than NO_ANSWER_S since."""
        return self.answer is not None and (self.sent_at is None or now - self.sent_at < NO_ANSWER_S)

    async def get(self) -> None:
        """One GET; its answer as `read` makes it, or None."""
        self.sent_at = time.monotonic()
        try:
            response = await self.client.get(self.url, timeout=TIMEOUT_S)
            response.raise_for_status()
            self.answer = self.read(response)
        except (httpx.HTTPError, ValueError, KeyError):
            self.answer = None
        finally:
            self.sent_at = None


@dataclass
class Watcher:
    """The three probes and the rows they make; `rows()` is the last WINDOW_S seconds."""

    api_url: str
    simulator_url: str
    window_s: float = WINDOW_S
    tick_s: float = TICK_S
    started: float = field(default_factory=time.monotonic)
    header: dict[str, str] = field(default_factory=dict)
    _rows: deque[Row] = field(default_factory=deque)
    _scrapes: deque[Scrape] = field(default_factory=deque)  # the last RATE_OVER_S seconds' answers of /metrics
    _interval: Row = field(default_factory=lambda: dict.fromkeys(INTERVAL_KEYS))

    def rows(self) -> list[Row]:
        """The rows of the window, oldest first; each has `t`, seconds since the watcher started.

        Copies, made without a switch of threads: the watch page's server reads them from a thread of its own.
        """
        return [dict(row) for row in list(self._rows)]

    async def run(self, stop: asyncio.Event) -> None:
        """Probe and make a row every tick until `stop` is set; then the probes are cancelled, not waited for."""
        async with (
            httpx.AsyncClient(timeout=TIMEOUT_S, trust_env=False) as client,
            httpx.AsyncClient(base_url=self.api_url, timeout=TIMEOUT_S, trust_env=False) as health_client,
        ):
            self.health = HealthProbes(time.perf_counter())
            self.metrics = Probe(client, f"{self.api_url}/metrics", read_scrape)
            self.simulator = Probe(client, f"{self.simulator_url}/admin/stats", read_simulator_stats)
            never = asyncio.Event()  # the probes are cancelled: a stalled API's answer is not waited for
            probes: list[asyncio.Task] = [  # each GET a tick after the last one started
                asyncio.create_task(every(self.tick_s, never, probe.get, paced=True))
                for probe in (self.metrics, self.simulator)
            ]
            probes.append(asyncio.create_task(probe_health(health_client, self.tick_s / 2, never, seen=self.health)))
            try:
                with contextlib.suppress(TimeoutError):  # the first row after the probes had a tick to answer
                    await asyncio.wait_for(stop.wait(), self.tick_s)
                await every(self.tick_s, stop, self._tick, paced=True)
            finally:
                for task in probes:
                    task.cancel()
                await asyncio.gather(*probes, return_exceptions=True)

    async def _tick(self) -> None:
        now = time.monotonic()
        row: Row = {"t": round(now - self.started, 3), **self._health(), **self._api(now), **self._simulator(now)}
        self._rows.append(row)
        while self._rows and self._rows[0]["t"] < row["t"] - self.window_s:
            self._rows.popleft()

    def _health(self) -> Row:
        """/health as timed by the one prober: the last answer's time, or longer while one waits (then: no answer)."""
        seen = self.health
        waiting = 0.0 if seen.sent_at is None else time.perf_counter() - seen.sent_at
        answered = bool(seen.answers) and not seen.refused  # the last GET had an answer
        if not answered and waiting < NO_ANSWER_S:
            return {"health_s": None, "api_answers": False}  # refused (and asked again at once): the API is down
        took_s = seen.answers[-1]["ms"] / 1000 if answered else 0.0
        return {"health_s": round(max(took_s, waiting), 4), "api_answers": answered and waiting < NO_ANSWER_S}

    def _api(self, now: float) -> Row:
        scrape: Scrape | None = self.metrics.answer if self.metrics.answers(now) else None
        if scrape is None:
            return dict.fromkeys([*GAUGES, *INTERVAL_KEYS])
        if not self._scrapes or scrape is not self._scrapes[-1]:
            self._add_scrape(scrape)
        return {key: scrape.get(name) for key, name in GAUGES.items()} | self._interval

    def _add_scrape(self, scrape: Scrape) -> None:
        """Lag, tickets/s and connections lent/s are figures of the time between answers: its rows get them too."""
        self.header = scrape.info
        self._scrapes.append(scrape)
        while len(self._scrapes) > 2 and self._scrapes[1].at <= scrape.at - RATE_OVER_S:
            self._scrapes.popleft()
        if len(self._scrapes) < 2:
            return
        before, oldest = self._scrapes[-2], self._scrapes[0]
        self._interval = interval_figures(before, oldest, scrape)
        since = before.at - self.started
        for row in reversed(self._rows):  # the rows of a stall, made while /metrics could not answer
            if row["t"] <= since:
                break
            row.update(self._interval)

    def _simulator(self, now: float) -> Row:
        stats = self.simulator.answer if self.simulator.answers(now) else None
        if stats is None:
            return dict.fromkeys(SIMULATOR_STATS)
        return {key: stats[name] for key, name in SIMULATOR_STATS.items()}


def record_tick_s(speed: float) -> float:
    """A recording's tick for the simulator's `speed` (0.05: twenty times faster): shorter with it, 0.1 s at least."""
    return max(0.1, RECORD_TICK_S * min(speed, 1.0))


@contextlib.contextmanager
def recorded_in_thread(api_url: str, simulator_url: str, speed: float, record: bool = True) -> Iterator[dict[str, Any]]:
    """Record what the server holds during a block, from a thread of its own (the block may block: a Locust run), a
    row every record_tick_s(speed): the dict gets the recording at its end; it stays empty without `record`."""
    held: dict[str, Any] = {}
    if not record:
        yield held
        return
    tick_s = record_tick_s(speed)
    with watching_in_thread(api_url, simulator_url, window_s=float("inf"), tick_s=tick_s) as watcher:
        yield held
        time.sleep(LINGER_TICKS * tick_s)
    rows = watcher.rows()  # what a recorded run keeps: the tick, the API's header (INTAKE_MODE, ...), peaks, rows
    held.update(tick_s=tick_s, header=watcher.header, peaks=peaks(rows, tick_s), rows=rows)


@contextlib.contextmanager
def watching_in_thread(
    api_url: str, simulator_url: str, window_s: float = WINDOW_S, tick_s: float = TICK_S
) -> Iterator[Watcher]:
    """A Watcher probing from a thread and event loop of its own, for code that blocks (a Locust run).

    Read its rows once the block has ended: the thread no longer adds to them then.
    """
    watcher = Watcher(api_url.rstrip("/"), simulator_url.rstrip("/"), window_s, tick_s)
    with in_thread(watcher.run, "watcher"):
        yield watcher


def peaks(rows: list[Row], tick_s: float) -> dict[str, float | None]:
    """The largest value of each series of rows made every `tick_s` (None where it has none); seconds without answer."""

    def largest(key: str) -> float | None:
        return max((row[key] for row in rows if row.get(key) is not None), default=None)

    created = [row["tickets_per_s"].get("created", 0.0) for row in rows if row.get("tickets_per_s")]
    silent = sum(1 for row in rows if row["health_s"] is not None and not row["api_answers"])
    return {
        **{f"{key}_max": largest(key) for key in ("health_s", "lag_s", *GAUGES, "db_lent_per_s", "sim_in_flight")},
        "created_per_s_max": max(created) if created else None,
        "no_answer_s": round(silent * tick_s, 1),
    }
