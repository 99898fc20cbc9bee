"""What the API's /metrics says between two scrapes: the event loop's lag, tickets per second by outcome, DB
connections lent per second (held_series's rows); what its watchdog saw, from its records' fields (scripts.client_cpu's
table); and the simulator's GET /admin/stats (the watcher's, scripts.check's)."""

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from scripts.toolkit.metrics import Metrics, read_metrics
from scripts.toolkit.running.apis import watchdog_records

LAG = "ticket_api_event_loop_lag_seconds"
Row = dict[str, Any]  # one row of toolkit.measure.held_series: the figures at one moment
RATE_OVER_S = 2.0  # tickets per second over the last 2 s: steadier than over one 0.2 s interval
# The figures of the time between two answers of /metrics (see _add_scrape): with several worker processes, the
# largest lag of any, and each one's, by pid.
INTERVAL_KEYS = ("lag_s", "lag_s_by_worker", "tickets_per_s", "db_lent_per_s")
# The API's gauges in a row: row key -> metric name.
GAUGES = {
    "threads_borrowed": "ticket_api_threads_borrowed",
    "threads_total": "ticket_api_threads_total",
    "threads_waiting": "ticket_api_threads_waiting",
    "db_in_use": "ticket_api_db_pool_in_use",
    "db_max": "ticket_api_db_pool_max",
    "db_waiting": "ticket_api_db_pool_waiting",
    "api_in_flight": "ticket_api_provider_in_flight",
}
# The simulator's GET /admin/stats in a row: row key -> stats key.
SIMULATOR_STATS = {"sim_in_flight": "in_flight", "quota_limit": "quota_limit", "quota_remaining": "quota_remaining"}


@dataclass
class Scrape(Metrics):
    """One reading of the API's /metrics, and when it answered."""

    at: float


def read_scrape(response: httpx.Response) -> Scrape:
    """Parse /metrics' Prometheus text, stamped with the time of its answer."""
    metrics = read_metrics(response.text)
    return Scrape(metrics.values, metrics.info, time.monotonic())


def lag_between(before: Metrics, after: Metrics, pid: str | None = None) -> dict:
    """The loop's lag between two readings of /metrics (of the worker `pid`, where there are several): heartbeats,
    their mean lag, the bucket that holds the p99 and the largest lag (s).

    The histogram keeps counts per bucket, not single values: the largest is the mean of the
    observations in the highest bucket that grew (the others counted at their bucket's lower bound),
    kept within that bucket's bounds: its error is at most the bucket's width (1 to 2.5 s, say).
    """
    worker = {"pid": pid} if pid else {}

    def grown(sample: str, **labels: str) -> float:
        return (after.get(sample, **worker, **labels) or 0.0) - (before.get(sample, **worker, **labels) or 0.0)

    count, total = grown(f"{LAG}_count"), grown(f"{LAG}_sum")
    figures: dict = {"heartbeats": int(count), "mean_s": total / count if count > 0 else None}
    figures |= {"p99_at_most_s": float("inf"), "largest_s": 0.0 if count <= 0 else None}
    lower, counted, below_sum = 0.0, 0.0, 0.0
    bounds = {dict(labels)["le"] for (name, labels), _ in after.values.items() if name == f"{LAG}_bucket"}
    for bound in sorted(bounds, key=float):
        cumulative = grown(f"{LAG}_bucket", le=bound)
        if count > 0 and cumulative >= 0.99 * count and figures["p99_at_most_s"] == float("inf"):
            figures["p99_at_most_s"] = float(bound)
        in_bucket = cumulative - counted
        if count > 0 and cumulative >= count:  # the highest bucket that grew
            figures["largest_s"] = round(min(max((total - below_sum) / in_bucket, lower), float(bound)), 4)
            break
        below_sum += in_bucket * lower
        lower, counted = float(bound), cumulative
    return figures


def watchdog_lines(log: Path, start: int, end: int) -> dict:
    """What the watchdog saw between two sizes of the API's log, from its records' fields: how many times it logged
    a blocked loop, the longest (ms), the line named most."""
    with open(log, "rb") as file:
        file.seek(start)
        text = file.read(end - start).decode(errors="replace")
    blocks = watchdog_records(text)
    places = Counter(block["at"] for block in blocks)
    return {
        "lines": len(blocks),
        "longest_ms": max((block["ms"] for block in blocks), default=0),
        "most_named": places.most_common(1)[0][0] if places else None,
    }


def interval_figures(before: Scrape, oldest: Scrape, scrape: Scrape) -> Row:
    """The figures of the time between answers of /metrics: the largest lag and the DB connections lent per
    second since `before`, tickets/s by outcome since `oldest` (RATE_OVER_S ago)."""
    created = by_label(scrape, "ticket_api_tickets_total", "outcome")
    earlier = by_label(oldest, "ticket_api_tickets_total", "outcome")
    lent, lent_before = scrape.get("ticket_api_db_pool_lent_total"), before.get("ticket_api_db_pool_lent_total")
    pids = sorted(by_label(scrape, f"{LAG}_count", "pid"))  # each worker process's event loop; none with one process
    by_worker = {pid: lag_between(before, scrape, pid)["largest_s"] for pid in pids}
    return {
        "lag_s": max(by_worker.values(), default=0.0) if by_worker else lag_between(before, scrape)["largest_s"],
        "lag_s_by_worker": by_worker or None,
        "tickets_per_s": {
            outcome: per_s(count, earlier.get(outcome, 0.0), scrape.at - oldest.at)
            for outcome, count in created.items()
        },
        # a check or a save holds its connection for milliseconds, between two looks at "in use": this rate sees it
        "db_lent_per_s": None
        if lent is None or lent_before is None
        else per_s(lent, lent_before, scrape.at - before.at),
    }


def per_s(count: float, earlier: float, seconds: float) -> float:
    """A counter's growth per second between two readings; after a reset (the API restarted) it counts from 0."""
    grown = count - earlier if count >= earlier else count
    return round(grown / seconds, 2) if seconds > 0 else 0.0


def read_simulator_stats(response: httpx.Response) -> dict[str, Any]:
    """The simulator's GET /admin/stats; KeyError or ValueError if it is not the simulator's answer."""
    stats = response.json()
    return {key: stats[key] for key in SIMULATOR_STATS.values()}


def by_label(scrape: Metrics, name: str, label: str) -> dict[str, float]:
    """{label value: sample value} of every sample of `name` in one reading of /metrics, such as tickets by outcome."""
    return {
        dict(labels)[label]: value
        for (sample, labels), value in scrape.values.items()
        if sample == name and label in dict(labels)
    }
