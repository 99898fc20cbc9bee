"""`python -m scripts.compare`: the table of medians beside the course's, its files, and nothing left running."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from scripts.toolkit.processes import start_process, stop_process
from scripts.toolkit.reports import course_figures
from scripts.toolkit.reports.charts import draw_health_medians
from scripts.toolkit.reports.compare_table import median_rows, render
from tests.lab.tools.commands import HELD_FIELDS, listening, run_module


def a_pass(mode: str, total_s: float, answers: int, median_ms: float | None, slowest_ms: float | None) -> dict:
    """One pass of scripts.stall as stall_runs records it."""
    return {
        "mode": mode,
        "loop": "asyncio",
        "url": "http://127.0.0.1:1",
        "simulator_url": "http://127.0.0.1:2",
        "total_s": total_s,
        "statuses": [201],
        "health_answers": answers,
        "health_median_ms": median_ms,
        "health_slowest_ms": slowest_ms,
        "ticket_runs": [{"ticket": n, "status": 201} for n in range(1, 9)],
    }


def test_each_figure_is_the_median_of_the_passes():
    runs = {
        "blocking": [
            a_pass("blocking", 19.0, 3, 8700.0, 9800.0),
            a_pass("blocking", 18.0, 4, 9000.0, 9900.0),
            a_pass("blocking", 20.0, 3, 8000.0, 9000.0),
        ],
        "async": [a_pass("async", 5.0, 0, None, None)],
    }
    blocking, free = median_rows(runs)
    assert (blocking["total_s"], blocking["health_answers"], blocking["health_median_ms"]) == (19.0, 3, 8700.0)
    assert blocking["health_slowest_ms"] == 9800.0 and blocking["passes"] == 3
    assert blocking["course"] == course_figures.stall("blocking")
    assert free["health_median_ms"] is None and free["statuses"] == [201]


def test_the_table_shows_a_stalled_health_in_seconds_and_a_free_one_in_milliseconds():
    rows = median_rows(
        {"blocking": [a_pass("blocking", 18.84, 3, 8737.2, 9824.7)], "async": [a_pass("async", 5.43, 51, 3.42, 6.0)]}
    )
    lines = render(rows, passes=1, speed=1).splitlines()
    assert "on asyncio's event loop, median of 1 pass" in lines[0] and "course: median of 5 passes" in lines[0]
    assert re.fullmatch(r"blocking\s+18\.8 s\s+3\s+8\.74 s\s+9\.82 s\s+\|\s+18\.8 s\s+3\s+8\.74 s\s+9\.82 s", lines[2])
    assert re.fullmatch(r"async\s+5\.4 s\s+51\s+3\.4 ms\s+6\.0 ms\s+\|\s+5\.4 s\s+51\s+3\.4 ms\s+6\.0 ms", lines[3])
    assert "speed 0.05" in render(rows, passes=1, speed=0.05).splitlines()[0]


def test_several_passes_show_each_pass_then_the_median_beside_the_course():
    passes = [a_pass("blocking", 19.3, 3, 9370.0, 9750.0), a_pass("blocking", 17.7, 4, 4686.0, 7990.0)]
    lines = render(median_rows({"blocking": [*passes, a_pass("blocking", 18.1, 3, 8384.0, 9485.0)]}), 3, 1).splitlines()
    assert "median of 3 passes" in lines[0]
    assert re.fullmatch(r"blocking, pass 1\s+19\.3 s\s+3\s+9\.37 s\s+9\.75 s", lines[2])
    assert re.fullmatch(r"blocking, pass 2\s+17\.7 s\s+4\s+4\.69 s\s+7\.99 s", lines[3])
    assert lines[4].startswith("blocking, pass 3")
    assert re.fullmatch(
        r"blocking, median\s+18\.1 s\s+3\s+8\.38 s\s+9\.48 s\s+\|\s+18\.8 s\s+3\s+8\.74 s\s+9\.82 s", lines[5]
    )


def test_the_chart_of_health_medians_is_an_svg_with_both_scales(tmp_path):
    rows = median_rows(
        {"blocking": [a_pass("blocking", 18.8, 3, 8737.2, 9824.7)], "thread": [a_pass("thread", 4.8, 45, 3.4, 5.4)]}
    )
    draw_health_medians(rows, str(tmp_path / "chart.svg"))
    svg = (tmp_path / "chart.svg").read_text()
    assert "8.74 s" in svg and "3.4 ms" in svg and "log scale" in svg


def test_unknown_modes_are_a_usage_error():
    result = run_module("scripts.compare", "--modes", "async,fast")
    assert result.returncode == 2
    assert "blocking, async, thread" in result.stderr


@pytest.mark.timing
def test_a_quick_comparison_shows_the_stall_writes_its_files_and_stops_everything(lab_database_url, tmp_path):
    result = run_module(
        "scripts.compare",
        "--speed",
        "0.1",
        "--out",
        str(tmp_path),
        "--json",
        "--seed",
        "3",
        env={"DATABASE_URL": lab_database_url},
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    rows = {row["mode"]: row for row in figures["rows"]}
    assert list(rows) == ["blocking", "async", "thread"]
    assert all(row["statuses"] == [201] for row in rows.values())
    # the slowest answer, not the median: at speed 0.1 blocking gets 3 to 5 answers and a quick one can be the median
    assert rows["blocking"]["health_slowest_ms"] > 5 * max(
        rows["async"]["health_slowest_ms"], rows["thread"]["health_slowest_ms"]
    )
    # 8 tickets' AI one at a time against 4 at a time. A busy machine adds each ticket's CPU in every mode, and the
    # ratio falls toward 1 (1.95 seen); a blocking mode that does not block gives about 1.
    assert rows["blocking"]["total_s"] > 1.5 * max(rows["async"]["total_s"], rows["thread"]["total_s"])
    names = sorted(os.path.basename(path) for path in figures["files"])
    assert names == [
        "compare.csv",
        "compare.json",
        "health-medians.svg",
        "held-async.svg",
        "held-blocking.svg",
        "held-thread.svg",
        "timeline-async.svg",
        "timeline-blocking.svg",
        "timeline-thread.svg",
    ]
    assert (tmp_path / "compare.csv").read_text().splitlines()[1].startswith("blocking,asyncio,1,")
    runs = json.loads((tmp_path / "compare.json").read_text())["runs"]
    assert all(len(ticket["provider_calls"]) == 3 for passes in runs.values() for ticket in passes[0]["ticket_runs"])
    assert 'id="ticket-8-call-3"' in (tmp_path / "timeline-thread.svg").read_text()
    held = {mode: passes[0]["held"] for mode, passes in runs.items()}
    assert all(recording["header"]["intake_mode"] == mode for mode, recording in held.items())
    assert all(
        len(recording["rows"]) >= 3 and set(HELD_FIELDS) <= set(recording["rows"][0]) for recording in held.values()
    )
    # the blocked loop's lag is read from the API's histogram, not sampled: seconds against milliseconds
    assert held["blocking"]["peaks"]["lag_s_max"] > 5 * held["async"]["peaks"]["lag_s_max"]
    # a save holds its connection for milliseconds: "in use" rarely sees it, the count of connections lent does
    assert held["async"]["peaks"]["db_lent_per_s_max"] >= 1
    assert "INTAKE_MODE=blocking" in (tmp_path / "held-blocking.svg").read_text()
    assert "held: /health up to" in result.stderr
    assert not any(listening(row["api_url"]) or listening(row["simulator_url"]) for row in rows.values())
    assert "blocking, pass 1/1" in result.stderr


def test_without_held_nothing_is_recorded_or_drawn(lab_database_url, tmp_path):
    result = run_module(
        "scripts.compare",
        *("--modes", "async", "--speed", "0.05", "--no-held", "--json", "--out", str(tmp_path)),
        env={"DATABASE_URL": lab_database_url},
    )
    assert result.returncode == 0, result.stderr
    assert not list(tmp_path.glob("held-*")) and "timeline-async.svg" in result.stdout
    assert "held" not in json.loads((tmp_path / "compare.json").read_text())["runs"]["async"][0]


def test_sigterm_stops_the_comparison_and_everything_it_started(lab_database_url, tmp_path):
    command = [sys.executable, "-m", "scripts.compare", "--speed", "0.3", "--modes", "blocking", "--out", str(tmp_path)]
    environment = {**os.environ, "DATABASE_URL": lab_database_url}
    process = start_process(command, env=environment, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        for line in process.stderr:
            seen.append(line)
            if "pass 1/1" in line:  # the simulator and the API run, and the tickets are on their way
                time.sleep(0.5)
                process.send_signal(signal.SIGTERM)
                break
        _, rest = process.communicate(timeout=60)
    finally:
        stop_process(process, graceful=False)  # already stopped, unless an assertion failed first
    urls = re.findall(r"http://127\.0\.0\.1:\d+", "".join(seen))
    assert process.returncode == 130
    assert rest.strip().endswith("interrupted") and "Traceback" not in rest
    assert len(urls) == 2 and not any(listening(url) for url in urls)


def test_unknown_loops_are_a_usage_error():
    result = run_module("scripts.compare", "--loop", "asyncio,trio")
    assert result.returncode == 2
    assert "'trio': give asyncio or uvloop" in result.stderr
