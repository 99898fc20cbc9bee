"""scripts.capacity's rows: the medians of each mode and users level over its passes, the table beside the course's
figures, and the files (JSON, CSV, the chart, what the server held)."""

from pathlib import Path

from scripts.stall import medians
from scripts.toolkit.measure.quantiles import middle_run
from scripts.toolkit.reports import charts, course_figures
from scripts.toolkit.reports.compare_table import write_figures
from scripts.toolkit.reports.held_chart import draw_held
from scripts.toolkit.reports.text import format_table

# The figures of a run that a row gives as their median over the passes.
FIGURES = (
    "tickets_per_s",
    "p50_ms",
    "p95_ms",
    "provider_s_per_ticket",
    "limit_per_s",
    "of_limit",
    "api_cpu_ms_per_ticket",
    "api_cpu_share",
    "locust_cpu_share",
)


def median_rows(runs: list[dict]) -> list[dict]:
    """One row per mode and users level: medians over the passes, failures summed."""
    rows = []
    for key in dict.fromkeys((each["mode"], each["users"]) for each in runs):
        passes = [each for each in runs if (each["mode"], each["users"]) == key]
        row = {"mode": key[0], "users": key[1], "passes": len(passes), "failures": sum(r["failures"] for r in passes)}
        row |= medians(passes, FIGURES)
        row["course"] = course_figures.locust(row["mode"], row["users"])
        rows.append(row)
    return rows


def render(rows: list[dict], duration_s: int, passes: int) -> str:
    """The course's table, with the Little's-law limit and the course's figures (8 users) on the right."""

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:,.1f} ms"

    def number(value: float | None, form: str) -> str:
        return "-" if value is None else format(value, form)

    def rate_and_times(figures: dict) -> list[str]:
        return [number(figures.get("tickets_per_s"), ".2f"), ms(figures.get("p50_ms")), ms(figures.get("p95_ms"))]

    headers = [
        "INTAKE_MODE",
        "users",
        "tickets/s",
        "p50",
        "p95",
        "failed",
        "provider/ticket",
        "limit",
        "of limit",
        "API CPU",
        "|",
        "course: tickets/s",
        "p50",
        "p95",
    ]
    lines = []
    for row in rows:
        lines.append(
            [
                row["mode"],
                str(row["users"]),
                *rate_and_times(row),
                str(row["failures"]),
                number(row["provider_s_per_ticket"], ".2f") + " s",
                number(row["limit_per_s"], ".2f"),
                number(row["of_limit"], ".1%"),
                number(row["api_cpu_share"], ".0%"),
                "|",
                *rate_and_times(row["course"] or {}),
            ]
        )
    title = (
        f"Locust, {duration_s} s per run, median of {passes} pass{'es' if passes > 1 else ''}; "
        "p50, p95 of every ticket's time, failed ones included; "
        "limit = users ÷ provider time per ticket, measured in the same run; API CPU in cores (100% = one)"
    )
    return title + "\n" + format_table(headers, lines)


def write_files(folder: Path, rows: list[dict], runs: list[dict], speed: float, draw: bool) -> list[str]:
    """capacity.json (every run), capacity.csv (the table), capacity.svg (the chart) and what each mode held.

    One held chart per mode and users level: of its median pass by tickets per second.
    """
    columns = ["mode", "users", "passes", "failures", *FIGURES]
    table = [[row[column] for column in columns] for row in rows]
    paths = write_figures(folder, "capacity", {"speed": speed, "rows": rows, "runs": runs}, columns, table)
    if draw:
        paths.append(folder / "capacity.svg")
        note = "" if speed == 1 else f" (speed {speed:g})"
        charts.draw_capacity(rows, str(paths[-1]), note)
        for row in rows:
            passes = [each for each in runs if (each["mode"], each["users"]) == (row["mode"], row["users"])]
            typical = middle_run(passes, "tickets_per_s")
            if "held" in typical:
                paths.append(folder / f"held-{row['mode']}-{row['users']}u.svg")
                draw_held(
                    typical["held"],
                    str(paths[-1]),
                    f"INTAKE_MODE={row['mode']}, {row['users']} Locust users for {typical['duration_s']} s, "
                    f"pass {typical['pass']} of {len(passes)}{note}",
                )
    return [str(path) for path in paths]
