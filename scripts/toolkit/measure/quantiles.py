"""The one quantile function of the tools (on the 0-1 scale, as `statistics` and NumPy's `quantile`), and summaries.

The median of figures over passes lives in the lesson's scripts/stall.py (`median`, `medians`): its --passes and
scripts.burst use it, and a snapshot holds only what it uses.
"""

import math
from collections.abc import Sequence


def quantile(values: list[float], q: float) -> float:
    """The q-quantile (0 to 1) of the values, interpolated between the two nearest; ValueError if empty."""
    if not values:
        raise ValueError("no values")
    if not 0 <= q <= 1:
        raise ValueError(f"q={q} is not between 0 and 1")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def percentiles(values_ms: list[float]) -> dict:
    """count, p50, p95, p99, max and mean of the samples; each figure is None when there are none."""
    if not values_ms:
        return {"count": 0, "p50": None, "p95": None, "p99": None, "max": None, "mean": None}
    return {
        "count": len(values_ms),
        **{f"p{p}": quantile(values_ms, p / 100) for p in (50, 95, 99)},
        "max": max(values_ms),
        "mean": sum(values_ms) / len(values_ms),
    }


def middle_run(runs: list[dict], figure: str) -> dict:
    """The run at the median of `figure` (of an even number, the later of the two in the middle): the one to draw."""
    return sorted(runs, key=lambda run: run[figure])[len(runs) // 2]


def most_at_once(intervals: Sequence[Sequence[float]], slack_s: float = 0.05) -> int:
    """The largest number of (start, end) intervals that overlap by more than `slack_s`: the calls' times on our
    clock are the API's Server-Timing, placed a moment apart from where they were."""
    steps = sorted([(start + slack_s, 1) for start, _ in intervals] + [(end - slack_s, -1) for _, end in intervals])
    most = current = 0
    for _, step in steps:
        current += step
        most = max(most, current)
    return most
