"""Experiment 9, scripts.client_cpu: the loop's lag read from /metrics, the watchdog's lines, a run end to end."""

import json

import pytest

from scripts.toolkit.measure.rates import lag_between
from scripts.toolkit.metrics import read_metrics
from tests.lab.tools.commands import listening, run_module

LAG = "ticket_api_event_loop_lag_seconds"


def lag_metrics(counts: dict[str, int], total_s: float) -> str:
    """Prometheus text of the lag histogram with these cumulative bucket counts."""
    lines = [f"# HELP {LAG} lag", f"# TYPE {LAG} histogram"]
    lines += [f'{LAG}_bucket{{le="{bound}"}} {count}' for bound, count in counts.items()]
    lines += [f"{LAG}_count {counts['+Inf']}", f"{LAG}_sum {total_s}"]
    return "\n".join(lines) + "\n"


def test_the_lag_of_a_window_is_what_its_two_readings_differ_by():
    before = lag_metrics({"0.005": 100, "0.1": 100, "0.5": 100, "+Inf": 100}, 0.1)
    after = lag_metrics({"0.005": 190, "0.1": 195, "0.5": 200, "+Inf": 200}, 2.1)
    lag = lag_between(read_metrics(before), read_metrics(after))
    assert lag["heartbeats"] == 100
    assert abs(lag["mean_s"] - 0.02) < 1e-9  # 2.0 s of lag over 100 heartbeats
    assert lag["p99_at_most_s"] == 0.5  # 95 of 100 within 0.1 s, all 100 within 0.5 s


def test_an_unknown_client_is_refused_in_one_line_naming_the_three():
    result = run_module("scripts.client_cpu", "--clients", "httpx,requests")
    assert result.returncode == 2
    assert "--clients: give some of httpx, httpx2, aiohttp" in result.stderr.splitlines()[-1]


@pytest.mark.timing
def test_a_short_run_prints_its_table_writes_its_figures_and_stops_what_it_started(tmp_path):
    result = run_module(
        "scripts.client_cpu", "--users", "8", "--clients", "httpx2,aiohttp", "--duration", "2", "--out", str(tmp_path)
    )
    assert result.returncode == 0, result.stderr[-2000:]
    table = result.stdout.splitlines()
    assert table[0].split()[:3] == ["client", "users", "tickets/s"]
    assert [line.split()[:2] for line in table[1:3]] == [["httpx2", "8"], ["aiohttp", "8"]]
    figures = json.loads((tmp_path / "client-cpu.json").read_text())
    httpx2, aiohttp = figures["rows"]  # in the order asked, one API each
    assert (httpx2["client"], aiohttp["client"]) == ("httpx2", "aiohttp") and httpx2["api_url"] != aiohttp["api_url"]
    assert all(row["level"]["users"] == 8 and row["level"]["tickets"] > 0 for row in (httpx2, aiohttp))
    # aiohttp's pool at 8 users leaves the loop free (the experiment's point): no watchdog line, a lag far under 250 ms
    assert aiohttp["lag"]["heartbeats"] > 0 and aiohttp["lag"]["p99_at_most_s"] <= 0.25
    assert aiohttp["watchdog"] == {"lines": 0, "longest_ms": 0, "most_named": None}
    chart = (tmp_path / "client-cpu.svg").read_text()
    assert chart.lstrip().startswith("<?xml")
    # one line per client asked, named in the legend (matplotlib writes each text as a comment), none for httpx
    assert "<!-- httpx2's own pool -->" in chart and "<!-- httpx over httpx-aiohttp -->" in chart
    assert "<!-- httpx 0.28's own pool -->" not in chart
    for row in (httpx2, aiohttp):
        assert not listening(row["api_url"]) and not listening(row["simulator_url"])
