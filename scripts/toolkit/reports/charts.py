"""The tools' charts: the timeline of one stall run, compare's /health medians, capacity's tickets per second,
experiment 9's clients."""

from pathlib import Path
from typing import Any

from scripts.toolkit.cli import CommandError, progress
from scripts.toolkit.reports.text import readable_ms


def load_pyplot():
    """matplotlib's pyplot without a display, or CommandError saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise CommandError('drawing needs matplotlib: pip install -e ".[plots]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def can_draw(what: str) -> bool:
    """True when matplotlib is installed; else a warning line that `what` will be missing."""
    try:
        load_pyplot()
    except CommandError as exc:
        progress(f"warning: no {what}: {exc}")
        return False
    return True


CALLS = (("classify", "#08519c"), ("draft", "#3182bd"), ("embed", "#9ecae1"))  # do_ai_work's calls, in order
WAITING: dict[str, Any] = dict(facecolor="white", edgecolor="0.45", hatch="///")  # a ticket waiting for the server
# A ticket whose answer did not say when the provider worked: no answer, no AI work, or a provider without HTTP.
UNKNOWN: dict[str, Any] = dict(color="0.8")
HEALTH_LINE: dict[str, Any] = dict(color="tab:orange", lw=6, marker="|", markersize=16, markeredgewidth=2)  # /health


def draw_timeline(result: dict, path: str, title: str) -> None:
    """Draw the run to scale: per ticket its provider calls and its waits for the server, per /health probe its wait."""
    plt = load_pyplot()
    runs = result["ticket_runs"]
    figure, axes = plt.subplots(figsize=(12, 2.4 + 0.5 * len(runs)), layout="constrained")
    for row, ticket in enumerate(runs, start=1):
        draw_ticket(axes, row, ticket)
    for probe in result["probes"]:
        axes.plot(
            [probe["start_s"], probe["start_s"] + probe["ms"] / 1000], [0, 0], solid_capstyle="butt", **HEALTH_LINE
        )
    axes.set_yticks(range(len(runs) + 1), ["GET /health"] + [f"ticket {t['ticket']}" for t in runs])
    axes.invert_yaxis()
    axes.set_xlim(0, max(result["total_s"], *(p["start_s"] + p["ms"] / 1000 for p in result["probes"])) * 1.17)
    axes.tick_params(labelsize=12)
    axes.grid(axis="x", alpha=0.3)
    axes.set_xlabel("seconds since the first ticket was sent", fontsize=12)
    axes.set_title(title, fontsize=14)
    without_calls = any(not ticket["provider_calls"] for ticket in runs)
    handles = legend_handles(without_calls)
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncol=len(handles),
        fontsize=11,
        frameon=False,
        handlelength=2.5,
        columnspacing=1.5,
    )
    figure.savefig(path, dpi=150)
    plt.close(figure)


def draw_ticket(axes: Any, row: int, ticket: dict) -> None:
    """One ticket: hatched from sent to answered, its provider calls solid on top, its outcome after it."""
    number, calls = ticket["ticket"], ticket["provider_calls"]
    whole = {"left": ticket["start_s"], "height": 0.6, "gid": f"ticket-{number}", **(WAITING if calls else UNKNOWN)}
    axes.barh(row, ticket["end_s"] - ticket["start_s"], **whole)
    for index, (start_s, end_s) in enumerate(calls):
        axes.barh(
            row,
            end_s - start_s,
            left=start_s,
            height=0.6,
            color=CALLS[index % len(CALLS)][1],
            edgecolor="white",
            linewidth=0.8,
            gid=f"ticket-{number}-call-{index + 1}",
        )
    ok = ticket["status"] == 201
    outcome = "201" if ok else f"{ticket['status'] or ''} {ticket['error']}".strip()
    provider = f", provider {ticket['ai_ms'] / 1000:.1f} s" if ticket["ai_ms"] is not None else ""
    axes.text(
        ticket["end_s"], row, f" {outcome}{provider}", va="center", fontsize=11, color="black" if ok else "tab:red"
    )


def legend_handles(without_calls: bool) -> list:
    """The timeline's legend: the three provider calls, the wait for the server, /health (and bars without calls)."""
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Artist] = [Patch(color=color, label=f"provider: {name}") for name, color in CALLS]
    handles.append(Patch(label="waiting for the server", **WAITING))
    handles.append(Line2D([], [], label="GET /health", **HEALTH_LINE))
    if without_calls:
        handles.append(Patch(label="answer without X-Provider-Calls", **UNKNOWN))
    return handles


MODE_COLORS = {"blocking": "tab:red", "async": "tab:green", "thread": "tab:blue"}


def draw_health_medians(rows: list[dict], path: str, note: str = "") -> None:
    """Bars of the /health median per mode, measured beside the course's, on a log scale so 3 ms shows next to 9 s."""
    plt = load_pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.2), layout="tight")
    width = 0.38
    for x, row in enumerate(rows):
        color = MODE_COLORS.get(row["mode"], "tab:gray")
        bars = [
            (x - width / 2, row["health_median_ms"], dict(color=color), "this run"),
            (
                x + width / 2,
                row["course"]["health_median_ms"],
                dict(facecolor="white", edgecolor=color, hatch="//"),
                "course",
            ),
        ]
        for left, value, style, label in bars:
            if value is None:
                continue
            axes.bar_label(
                axes.bar(left, value, width, **style), [f"{readable_ms(value)}\n{label}"], padding=3, fontsize=8
            )
    axes.set_yscale("log")
    axes.set_ylim(0.5, 60_000)
    axes.set_yticks([1, 10, 100, 1000, 10_000], ["1 ms", "10 ms", "100 ms", "1 s", "10 s"])
    several_loops = len({row.get("loop") for row in rows}) > 1
    axes.set_xticks(
        range(len(rows)), [f"{row['mode']}\non {row['loop']}" if several_loops else row["mode"] for row in rows]
    )
    axes.set_xlabel("INTAKE_MODE")
    axes.set_ylabel("median time of GET /health (log scale)")
    axes.set_title(f"GET /health while 8 tickets are created, 4 at a time{note}", fontsize=10)
    figure.savefig(path)
    plt.close(figure)


def draw_capacity(rows: list[dict], path: str, note: str = "") -> None:
    """Successful tickets per second per mode (grouped by users), each bar with its Little's-law limit."""
    plt = load_pyplot()
    levels = sorted({row["users"] for row in rows})
    modes = list(dict.fromkeys(row["mode"] for row in rows))
    width = 0.8 / len(modes)
    figure, axes = plt.subplots(figsize=(max(6, 2.2 * len(levels) + 2), 4.2), layout="tight")
    limit_label: str | None = "Little's-law limit: users ÷ provider time per ticket"
    for group, users in enumerate(levels):
        for index, mode in enumerate(modes):
            row = next((r for r in rows if r["users"] == users and r["mode"] == mode), None)
            if row is None:
                continue
            x = group - 0.4 + width * (index + 0.5)
            axes.bar(
                x,
                row["tickets_per_s"],
                width * 0.9,
                color=MODE_COLORS.get(mode, "tab:gray"),
                label=mode if group == 0 else None,
            )
            axes.annotate(
                f"{row['tickets_per_s']:.2f}",
                (x, row["tickets_per_s"]),
                xytext=(0, -3),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=8,
            )
            if row["limit_per_s"]:
                axes.hlines(
                    row["limit_per_s"], x - width / 2, x + width / 2, colors="black", linestyles="--", label=limit_label
                )
                limit_label = None
    top = max(max(row["tickets_per_s"], row["limit_per_s"] or 0) for row in rows)
    axes.set_ylim(0, top * 1.35 or 1)
    axes.set_xticks(range(len(levels)), [f"{users} users" for users in levels])
    axes.set_ylabel("successful tickets per second")
    axes.set_title(f"Closed-loop Locust load per INTAKE_MODE{note}", fontsize=10)
    axes.legend(fontsize=8, loc="upper center", ncol=2)
    figure.savefig(path)
    plt.close(figure)


def draw_client_cpu(rows: list[dict], labels: dict[str, str], path: Path) -> None:
    """Experiment 9: tickets per second by users for each client (`labels`: their names in the legend), against the
    limit; /health's p99 beside it."""
    plt = load_pyplot()
    figure, (throughput, health) = plt.subplots(1, 2, figsize=(10, 4))
    for client in [name for name in labels if any(row["client"] == name for row in rows)]:
        levels = [row["level"] for row in rows if row["client"] == client]
        users = [level.users for level in levels]
        throughput.plot(users, [level.counted_per_s for level in levels], marker="o", label=labels[client])
        health.plot(users, [level.health_p99_ms for level in levels], marker="o", label=labels[client])
    users = sorted({row["level"].users for row in rows})
    limits = [next(row["level"].limit for row in rows if row["level"].users == count) for count in users]
    throughput.plot(users, limits, "k--", label="the physical limit: users ÷ T")
    throughput.set(xlabel="users", ylabel="tickets per second, counted in the window", title="Tickets per second")
    health.set(xlabel="users", ylabel="GET /health p99, ms (log scale)", yscale="log", title="GET /health meanwhile")
    throughput.set_ylim(bottom=0)
    for axes in (throughput, health):
        axes.set_xticks(users)
        axes.legend(fontsize=8)
    figure.suptitle("When the client is the CPU work: provider.acall over three connection pools", fontsize=10)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
