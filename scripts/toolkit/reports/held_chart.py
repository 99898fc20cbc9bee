"""What the server held during a recorded run (held_series's recording): its peaks in one line, and its chart.

Root-only, like the watcher: scripts.compare and scripts.capacity draw one chart per run.
"""

import functools
from typing import Any

from scripts.toolkit.reports.charts import load_pyplot
from scripts.toolkit.reports.text import readable_ms

NO_ANSWER_COLOR = (0.86, 0, 0, 0.13)  # the live page's shading
OUTCOME_COLORS = {"created": "#2a9d3a", "db_busy": "#8e44ad", "ai_busy": "#e07b00"}
WORKER_COLORS = ("#c0392b", "#1f5fbf", "#e07b00", "#2a9d3a", "#7f8c8d", "#16a085")  # the live page's, in its order
BESIDE = {"loc": "upper left", "bbox_to_anchor": (1.0, 1.0), "fontsize": 9, "frameon": False}  # a panel's legend


Line = tuple[str, str, str, str]  # a series' key, its label, its colour and its line style
Panel = tuple[str, list[Line], str]  # the panel's title, its lines, its unit


def draw_held(held: dict, path: str, title: str) -> None:
    """What the server held during one recorded run (held_series's rows): one panel per series, one time axis.

    The panels of scripts.watch's page: /health as the watcher timed it, the loop's lag, threads,
    DB connections in use and lent per second, provider calls in flight (and the simulator's quota
    when it is on), tickets/s by outcome. Where the API did not answer the watcher, every panel is
    shaded and the API's own gauges have no value (the simulator's still do).
    """
    plt = load_pyplot()
    from matplotlib.patches import Patch

    rows = held["rows"]
    panels = held_panels(held)
    figure, axes_list = plt.subplots(
        len(panels), 1, sharex=True, figsize=(12, 1.75 * len(panels) + 1.2), layout="constrained"
    )
    for axes, panel in zip(axes_list, panels, strict=True):
        draw_panel(axes, panel, rows, held["tick_s"])
    axes_list[-1].set_xlabel(
        f"seconds since the recording started (a sample every {held['tick_s']:g} s)",
        fontsize=11,
    )
    no_answer = Patch(color=NO_ANSWER_COLOR, label="no answer from the API\n(its own gauges unread)")
    axes_list[0].legend(handles=[no_answer], **BESIDE)
    header = held.get("header") or {}
    how = ", ".join(
        f"{name} {header[key]}"
        for name, key in (("loop", "event_loop"), ("THREAD_LIMIT", "thread_limit"), ("pool", "db_pool_max_size"))
        if key in header
    )
    figure.suptitle(f"What the server held: {title}" + (f"\n({how})" if how else ""), fontsize=13)
    figure.savefig(path)
    plt.close(figure)


def held_panels(held: dict) -> list[Panel]:
    """The chart's panels, each titled with its peaks: /health, the lag, threads, DB connections in use and lent,
    provider calls, the simulator's quota when it is on, tickets per second by outcome."""
    rows, peaks = held["rows"], held["peaks"]
    panels = [*_wait_panels(rows, peaks), *_held_panels(peaks)]
    if any(row.get("quota_limit") for row in rows):
        panels.append(
            ("simulator quota remaining", [("quota_remaining", "chat calls left this minute", "#16a085", "-")], "count")
        )
    panels.append(
        (
            f"tickets per second by outcome (over 2 s): created at most {peaks['created_per_s_max'] or 0:g}/s",
            [(outcome, outcome, OUTCOME_COLORS.get(outcome, "0.4"), "-") for outcome in _outcomes(rows)],
            "by outcome",
        )
    )
    return panels


def _wait_panels(rows: list[dict], peaks: dict[str, Any]) -> list[Panel]:
    """/health as the watcher timed it, and the loop's lag (each worker's, of several)."""

    def seconds(value: float | None) -> str:
        return readable_ms(None if value is None else value * 1000)

    workers = sorted({pid for row in rows for pid in row.get("lag_s_by_worker") or {}})
    no_answer = f"no answer for {peaks['no_answer_s']:g} s" if peaks["no_answer_s"] else "answered throughout"
    lags = [
        (f"worker {pid}", f"worker {pid}", WORKER_COLORS[i % len(WORKER_COLORS)], "-") for i, pid in enumerate(workers)
    ]
    return [
        (
            f"/health, timed by the watcher: slowest {seconds(peaks['health_s_max'])}, {no_answer}",
            [("health_s", "/health", "#1f5fbf", "-")],
            "seconds",
        ),
        (
            f"event-loop lag (largest in each interval): largest {seconds(peaks['lag_s_max'])}"
            + (f", {len(workers)} worker processes" if workers else ""),
            lags or [("lag_s", "lag", "#c0392b", "-")],
            "seconds",
        ),
    ]


def _held_panels(peaks: dict[str, Any]) -> list[Panel]:
    """Threads borrowed, DB connections in use and lent per second, provider calls in flight."""
    most = functools.partial(_most, peaks)
    return [
        (
            f"threads borrowed: at most {most('threads_borrowed')} of {most('threads_total')}, "
            f"{most('threads_waiting')} waiting",
            [
                ("threads_borrowed", "borrowed", "#e07b00", "-"),
                ("threads_waiting", "waiting for one", "#8e44ad", "-"),
                ("threads_total", "THREAD_LIMIT", "0.6", "--"),
            ],
            "count",
        ),
        (
            f"DB connections in use: at most {most('db_in_use')} of {most('db_max')}, {most('db_waiting')} waiting",
            [
                ("db_in_use", "in use", "#2a9d3a", "-"),
                ("db_waiting", "requests waiting", "#c0392b", "-"),
                ("db_max", "pool size", "0.6", "--"),
            ],
            "count",
        ),
        (
            f"DB connections lent per second: at most {most('db_lent_per_s')} "
            "(a check or a save holds one for milliseconds)",
            [("db_lent_per_s", "lent per second", "#2a9d3a", "-")],
            "per second",
        ),
        (
            f"provider calls in flight: at most {most('api_in_flight')} "
            + ("(the API's, read only when it answers), " if peaks["no_answer_s"] else "(the API's), ")
            + f"{most('sim_in_flight')} (the simulator's)",
            [("api_in_flight", "the API's", "#1f5fbf", "-"), ("sim_in_flight", "the simulator's", "#16a085", "--")],
            "count",
        ),
    ]


def draw_panel(axes: Any, panel: Panel, rows: list[dict], tick_s: float) -> None:
    """One panel: its lines over the rows' times, shaded where the API did not answer the watcher."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    title, lines, unit = panel
    for at in (row["t"] for row in rows if row["health_s"] is not None and not row["api_answers"]):
        axes.axvspan(at - tick_s, at, color=NO_ANSWER_COLOR, lw=0)
    top = {"seconds": 0.05, "count": 4, "per second": 4, "by outcome": 2}[unit]
    for key, label, color, style in lines:
        values = _series(rows, key)
        # steps: a gauge keeps its value until the next sample; dots: a sample between gaps still shows
        axes.plot(
            [row["t"] for row in rows],
            values,
            color=color,
            ls=style,
            lw=2,
            marker="." if style == "-" else None,
            markersize=4,
            label=label,
            drawstyle="steps-post" if unit == "count" else "default",
        )
        top = max([top, *(v for v in values if v == v)])
    axes.set_ylim(0, top * 1.15)
    if unit == "seconds":
        axes.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 1000:g} ms" if v < 1 else f"{v:g} s"))
    else:
        axes.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=unit == "count"))
    axes.set_title(title, loc="left", fontsize=11)
    axes.grid(alpha=0.3)
    if len(lines) > 1 or unit == "by outcome":
        axes.legend(**BESIDE)


def _outcomes(rows: list[dict]) -> list[str]:
    """The outcomes of the rows' tickets per second, `created` first."""
    return sorted({o for row in rows for o in row.get("tickets_per_s") or {}}, key=lambda o: (o != "created", o))


def _series(rows: list[dict], key: str) -> list[float]:
    """One line's values over the rows (NaN where it has none): a series, one worker's lag, or one outcome's rate."""
    if key.startswith("worker "):  # one worker's lag, of several
        values = [(row.get("lag_s_by_worker") or {}).get(key.removeprefix("worker ")) for row in rows]
    elif key in _outcomes(rows):  # tickets per second of one outcome, 0 where the others had some
        values = [row["tickets_per_s"].get(key, 0.0) if row.get("tickets_per_s") else None for row in rows]
    else:
        values = [row.get(key) for row in rows]
    return [float("nan") if value is None else value for value in values]


def _most(peaks: dict[str, Any], key: str) -> str:
    """A series' largest value as read ("-" if it has none)."""
    value = peaks.get(f"{key}_max")
    return "-" if value is None else f"{value:g}"


def describe_peaks(peaks: dict[str, Any]) -> str:
    """A recording's peaks in one progress line."""

    most = functools.partial(_most, peaks)

    def seconds(key: str) -> str:
        value = peaks.get(f"{key}_max")
        return "-" if value is None else f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s"

    return (
        f"held: /health up to {seconds('health_s')}, lag up to {seconds('lag_s')}, "
        f"threads {most('threads_borrowed')} of {most('threads_total')}, "
        f"DB connections {most('db_in_use')} of {most('db_max')} ({most('db_waiting')} waiting, "
        f"lent at up to {most('db_lent_per_s')}/s), "
        f"provider calls in flight {most('api_in_flight')} (simulator: {most('sim_in_flight')})"
    )
