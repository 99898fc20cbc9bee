"""scripts.compare's rows: the median pass of each mode beside the course's figures, the table, and the files (JSON,
CSV, the charts, what the server held); the JSON and CSV written as scripts.capacity writes its own."""

import csv
import json
from pathlib import Path

from scripts.stall import medians
from scripts.toolkit.measure.quantiles import middle_run
from scripts.toolkit.reports import charts, course_figures
from scripts.toolkit.reports.held_chart import draw_held
from scripts.toolkit.reports.text import format_table, readable_ms

FIGURES = ("total_s", "health_answers", "health_median_ms", "health_slowest_ms")  # of a stall run, as the course's


def median_rows(runs: dict) -> list[dict]:
    """One row per mode and loop: the median of each figure over its passes (each pass's under "each"),
    next to the course's figures."""
    rows = []
    for results in runs.values():
        first = results[0]
        rows.append(
            {
                "mode": first["mode"],
                "loop": first["loop"],
                "passes": len(results),
                "api_url": first["url"],
                "simulator_url": first["simulator_url"],
                "statuses": sorted({status for result in results for status in result["statuses"]}),
                **medians(results, FIGURES),
                "each": [{figure: result[figure] for figure in FIGURES} for result in results],
                "course": course_figures.stall(first["mode"]),
            }
        )
    return rows


def shown_figures(row: dict) -> list[str]:
    """A row's four figures as the table shows them."""
    return [
        f"{row['total_s']:.1f} s",
        f"{row['health_answers']:g}",
        readable_ms(row["health_median_ms"]),
        readable_ms(row["health_slowest_ms"]),
    ]


def render(rows: list[dict], passes: int, speed: float) -> str:
    """The comparison table, the course's figures on the right; a loop column when several loops ran."""
    loops = list(dict.fromkeys(row["loop"] for row in rows))
    several = len(loops) > 1
    headers = [
        "INTAKE_MODE",
        *(["loop"] if several else []),
        "8 tickets",
        "/health answers",
        "median",
        "slowest",
        "|",
        "course: 8 tickets",
        "answers",
        "median",
        "slowest",
    ]
    lines = []
    for row in rows:
        label = [row["mode"], *([row["loop"]] if several else [])]
        if row["passes"] > 1:  # each pass, then the median of each figure: the spread behind the median
            lines += [
                [f"{label[0]}, pass {n}", *label[1:], *shown_figures(each), *[""] * 5]
                for n, each in enumerate(row["each"], 1)
            ]
            label[0] += ", median"
        lines.append([*label, *shown_figures(row), "|", *shown_figures(row["course"])])
    where = "and event loop" if several else {"asyncio": "on asyncio's event loop", "uvloop": "on uvloop"}[loops[0]]
    title = f"scripts.stall per INTAKE_MODE {where}, median of {passes} pass{'es' if passes > 1 else ''}"
    title += "; course: median of 5 passes" if speed == 1 else f" at simulator speed {speed:g} (the course ran at 1)"
    return title + "\n" + format_table(headers, lines)


def write_figures(folder: Path, name: str, everything: dict, headers: list[str], rows: list[list]) -> list[Path]:
    """NAME.json (`everything`) and NAME.csv (the table of `headers` and `rows`) in `folder`: their paths."""
    paths = [folder / f"{name}.json", folder / f"{name}.csv"]
    paths[0].write_text(json.dumps(everything, indent=2))
    with open(paths[1], "w", newline="") as file:
        csv.writer(file).writerows([headers, *rows])
    return paths


def write_files(folder: Path, rows: list[dict], runs: dict, speed: float, draw: bool) -> list[str]:
    """compare.json (everything), compare.csv (the table), the chart, one timeline per mode and what it held.

    The timeline and the held chart draw the same pass: the median one by the tickets' total time.
    """
    headers = ["mode", "loop", "passes", *FIGURES, *(f"course_{figure}" for figure in FIGURES)]
    table = [
        [row["mode"], row["loop"], row["passes"], *(row[f] for f in FIGURES), *(row["course"][f] for f in FIGURES)]
        for row in rows
    ]
    written = write_figures(folder, "compare", {"speed": speed, "rows": rows, "runs": runs}, headers, table)
    if draw:
        note = "" if speed == 1 else f" (speed {speed:g})"
        written.append(folder / "health-medians.svg")
        charts.draw_health_medians(rows, str(written[-1]), note)
        for name, results in runs.items():
            typical = middle_run(results, "total_s")
            written.append(folder / f"timeline-{name}.svg")
            charts.draw_timeline(
                typical,
                str(written[-1]),
                f"INTAKE_MODE={typical['mode']} on {typical['loop']}: 8 tickets, 4 at a time, and GET /health",
            )
            if "held" in typical:
                written.append(folder / f"held-{name}.svg")
                draw_held(
                    typical["held"],
                    str(written[-1]),
                    f"INTAKE_MODE={typical['mode']}, scripts.stall (8 tickets, 4 at a time), "
                    f"pass {typical['pass']} of {len(results)}{note}",
                )
    return [str(path) for path in written]
