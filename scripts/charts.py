"""The charts of scripts.compare and scripts.capacity (the timeline of one stall run is in scripts.stall)."""

from scripts.stall import load_pyplot

MODE_COLORS = {"blocking": "tab:red", "async": "tab:green", "thread": "tab:blue"}


def readable_ms(ms: float) -> str:
    """`8.74 s` from a thousand milliseconds on, else `3.4 ms`."""
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.1f} ms"


def draw_health_medians(rows: list[dict], path: str, note: str = "") -> None:
    """Bars of the /health median per mode, measured beside the course's, on a log scale so 3 ms shows next to 9 s."""
    plt = load_pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.2))
    width = 0.38
    for x, row in enumerate(rows):
        color = MODE_COLORS.get(row["mode"], "tab:gray")
        bars = [(x - width / 2, row["health_median_ms"], dict(color=color), "this run"),
                (x + width / 2, row["course"]["health_median_ms"], dict(facecolor="white", edgecolor=color,
                                                                          hatch="//"), "course")]
        for left, value, style, label in bars:
            if value is None:
                continue
            axes.bar(left, value, width, **style)
            axes.annotate(f"{readable_ms(value)}\n{label}", (left, value), xytext=(0, 3), textcoords="offset points",
                          ha="center", va="bottom", fontsize=8)
    axes.set_yscale("log")
    axes.set_ylim(0.5, 60_000)
    axes.set_yticks([1, 10, 100, 1000, 10_000], ["1 ms", "10 ms", "100 ms", "1 s", "10 s"])
    several_loops = len({row.get("loop") for row in rows}) > 1
    axes.set_xticks(range(len(rows)), [f"{row['mode']}\non {row['loop']}" if several_loops else row["mode"]
                                       for row in rows])
    axes.set_xlabel("INTAKE_MODE")
    axes.set_ylabel("median time of GET /health (log scale)")
    axes.set_title(f"GET /health while 8 tickets are created, 4 at a time{note}", fontsize=10)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def draw_capacity(rows: list[dict], path: str, note: str = "") -> None:
    """Successful tickets per second per mode (grouped by users), each bar with its Little's-law limit."""
    plt = load_pyplot()
    levels = sorted({row["users"] for row in rows})
    modes = list(dict.fromkeys(row["mode"] for row in rows))
    width = 0.8 / len(modes)
    figure, axes = plt.subplots(figsize=(max(6, 2.2 * len(levels) + 2), 4.2))
    limit_label = "Little's-law limit: users ÷ provider time per ticket"
    for group, users in enumerate(levels):
        for index, mode in enumerate(modes):
            row = next((r for r in rows if r["users"] == users and r["mode"] == mode), None)
            if row is None:
                continue
            x = group - 0.4 + width * (index + 0.5)
            axes.bar(x, row["tickets_per_s"], width * 0.9, color=MODE_COLORS.get(mode, "tab:gray"),
                     label=mode if group == 0 else None)
            axes.annotate(f"{row['tickets_per_s']:.2f}", (x, row["tickets_per_s"]), xytext=(0, -3),
                          textcoords="offset points", ha="center", va="top", fontsize=8)
            if row["limit_per_s"]:
                axes.hlines(row["limit_per_s"], x - width / 2, x + width / 2, colors="black", linestyles="--",
                            label=limit_label)
                limit_label = None
    top = max(max(row["tickets_per_s"], row["limit_per_s"] or 0) for row in rows)
    axes.set_ylim(0, top * 1.35 or 1)
    axes.set_xticks(range(len(levels)), [f"{users} users" for users in levels])
    axes.set_ylabel("successful tickets per second")
    axes.set_title(f"Closed-loop Locust load per INTAKE_MODE{note}", fontsize=10)
    axes.legend(fontsize=8, loc="upper center", ncol=2)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
