"""What the API tells of its event loop: the lag histogram of its /metrics between two readings, and the lines its
watchdog logged (scripts.client_cpu's table, toolkit.watcher's rows)."""

import re
from collections import Counter
from pathlib import Path

from scripts.toolkit.metrics import Metrics

LAG = "ticket_api_event_loop_lag_seconds"
BLOCKED = re.compile(r"event loop blocked for (\d+) ms so far, at (.*)$")


def lag_between(before: Metrics, after: Metrics) -> dict:
    """The loop's lag between two readings of /metrics: heartbeats, their mean lag, the bucket that holds the p99
    and the largest lag (s).

    The histogram keeps counts per bucket, not single values: the largest is the mean of the
    observations in the highest bucket that grew (the others counted at their bucket's lower bound),
    kept within that bucket's bounds: its error is at most the bucket's width (1 to 2.5 s, say).
    """

    def grown(sample: str, **labels: str) -> float:
        return (after.get(sample, **labels) or 0.0) - (before.get(sample, **labels) or 0.0)

    count, total = grown(f"{LAG}_count"), grown(f"{LAG}_sum")
    figures: dict = {"heartbeats": int(count), "mean_s": total / count if count > 0 else None}
    figures |= {"p99_at_most_s": float("inf"), "largest_s": 0.0 if count <= 0 else None}
    lower, counted, below_sum = 0.0, 0.0, 0.0
    for bound in sorted(after.by_label(f"{LAG}_bucket", "le"), key=float):
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
    """What the watchdog logged between two sizes of its log: blocked-loop lines, the longest, the line named most."""
    with open(log, "rb") as file:
        file.seek(start)
        text = file.read(end - start).decode(errors="replace")
    blocks = [match for match in map(BLOCKED.search, text.splitlines()) if match]
    places = Counter(match[2] for match in blocks)
    return {
        "lines": len(blocks),
        "longest_ms": max((int(match[1]) for match in blocks), default=0),
        "most_named": places.most_common(1)[0][0] if places else None,
    }
