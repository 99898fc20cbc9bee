"""`python -m scripts.capacity` and locustfiles/tickets.py: Locust's figures, the Little's-law limit, the table.

Locust runs in child processes only: importing it here would monkey-patch this test process.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.toolkit.cli import PROJECT_ROOT
from scripts.toolkit.load.locust import read_ticket_times, run_locust, ticket_figures
from scripts.toolkit.measure.quantiles import quantile
from scripts.toolkit.reports.capacity_table import median_rows, render
from scripts.toolkit.reports.charts import draw_capacity
from tests.fakes import FakeProvider
from tests.lab.tools.commands import HELD_FIELDS, listening, run_module
from ticket_api.errors import ProviderBusy


def write_times(path: Path, rows: list[tuple]) -> None:
    """A CSV as scripts/toolkit/load/request_times.py writes it in one Locust process."""
    lines = ["method,name,response_time_ms,ok", *(",".join(map(str, row)) for row in rows)]
    path.write_text("\n".join(lines) + "\n")


def test_figures_are_exact_over_every_process_and_count_failures_as_locust_does(tmp_path):
    # two workers' files; Locust would report the p50 as 2,200 and the p95 as 3,000 (two significant digits)
    write_times(tmp_path / "101.csv", [("POST", "/v1/tickets", 2237.31, 1), ("POST", "/v1/tickets", 96.2, 0)])
    write_times(
        tmp_path / "102.csv",
        [
            ("POST", "/v1/tickets", 2241.7, 1),
            ("POST", "/v1/tickets", 3030.24, 1),
            ("GET", "/v1/tickets?customer_id=[id]", 4.1, 1),
            ("POST", "/v1/tickets", 2190.05, 1),
        ],
    )
    (tmp_path / "103.csv").write_text("method,name,response_time_ms,ok\n")  # a worker that got no user
    times = read_ticket_times(tmp_path)
    tickets_ms = [2237.31, 96.2, 2241.7, 3030.24, 2190.05]
    assert sorted(ms for ms, _ in times) == sorted(tickets_ms)
    figures = ticket_figures(times, users=8)
    assert figures == {
        "requests": 5,
        "failures": 1,
        "tickets_per_s": pytest.approx(8 / (sum(tickets_ms) / 5 / 1000) * 4 / 5),
        "p50_ms": pytest.approx(quantile(tickets_ms, 0.5), abs=0.05),
        "p95_ms": pytest.approx(quantile(tickets_ms, 0.95), abs=0.05),
    }
    assert round(figures["p50_ms"], 1) == 2237.3 and round(figures["p95_ms"], 1) == 2872.5
    assert ticket_figures([], users=8)["tickets_per_s"] == 0.0
    with pytest.raises(OSError):
        read_ticket_times(tmp_path / "nothing")


def a_run(mode: str, users: int, tickets_per_s: float, provider_s: float, **extra) -> dict:
    """One run's figures as locust_runs records them, with the limit from `provider_s`."""
    limit = users / provider_s
    return {
        "mode": mode,
        "users": users,
        "tickets_per_s": tickets_per_s,
        "p50_ms": 2200.0,
        "p95_ms": 2900.0,
        "failures": 0,
        "provider_s_per_ticket": provider_s,
        "limit_per_s": limit,
        "of_limit": tickets_per_s / limit,
        "api_cpu_ms_per_ticket": 5.0,
        "api_cpu_share": 0.02,
        "locust_cpu_share": 0.01,
        **extra,
    }


def test_rows_are_medians_over_passes_with_the_course_only_at_8_users():
    runs = [
        a_run("async", 8, 3.4, 2.25),
        a_run("async", 8, 3.5, 2.2),
        a_run("async", 8, 3.3, 2.3),
        a_run("thread", 32, 9.0, 2.3, failures=2),
        a_run("thread", 32, 9.5, 2.3, failures=1),
    ]
    free, thread = median_rows(runs)
    assert free["passes"] == 3 and free["tickets_per_s"] == 3.4 and free["provider_s_per_ticket"] == 2.25
    assert free["course"] == {"tickets_per_s": 3.47, "p50_ms": 2146.6, "p95_ms": 2734.2}
    assert thread["course"] is None and thread["failures"] == 3 and thread["tickets_per_s"] == 9.25
    table = render([free, thread], duration_s=40, passes=3)
    assert "median of 3 passes" in table and "users ÷ provider time per ticket" in table
    assert "failed ones included" in table
    assert "2,200.0 ms" in table and "3.56" in table and "3.47" in table and "2,734.2 ms" in table


def test_the_chart_marks_each_limit(tmp_path):
    rows = median_rows([a_run("thread", 8, 3.2, 2.3), a_run("blocking", 8, 0.4, 2.2), a_run("async", 8, 3.5, 2.25)])
    draw_capacity(rows, str(tmp_path / "capacity.svg"))
    svg = (tmp_path / "capacity.svg").read_text()
    assert "Little" in svg and "0.40" in svg and "3.50" in svg


def test_the_locustfile_names_failures_by_error_code(served_api, tmp_path):
    with served_api("async", FakeProvider(0.01, error=ProviderBusy("quota spent", retry_after=30))) as url:
        figures = run_locust(url, users=2, duration_s=2, workers=0, prefix=str(tmp_path / "busy"))
    assert figures["requests"] > 0 and figures["failures"] == figures["requests"]
    report = Path(figures["locust_log"]).read_text().split("Error report")[-1]
    assert f"{figures['failures']}" in report and "ai_busy (503)" in report
    assert figures["tickets_per_s"] == 0.0


@pytest.mark.timing
def test_the_recorded_times_are_locusts_own_unrounded(served_api, tmp_path):
    with served_api("async", FakeProvider(0.05)) as url:
        figures = run_locust(url, users=2, duration_s=2, workers=0, prefix=str(tmp_path / "exact"))
    times_ms = [ms for ms, _ in read_ticket_times(tmp_path / "exact-times")]
    (locusts,) = [e for e in json.loads((tmp_path / "exact.json").read_text()) if e["name"] == "/v1/tickets"]
    # Locust sums the times it measured before it rounds them into its buckets: the same tickets, the same sum
    assert len(times_ms) == locusts["num_requests"] == figures["requests"] > 4
    # the whole --run-time (a 2 s run lasted 1.0 s on a quiet machine, 0.1 s on a busy one, before request_times.py
    # brought gevent's clock up to date), less the last ticket's time
    assert locusts["last_request_timestamp"] - locusts["start_time"] > 1.5
    assert sum(times_ms) == pytest.approx(locusts["total_response_time"], rel=1e-9)
    assert figures["p50_ms"] == pytest.approx(quantile(times_ms, 0.5), abs=0.05)
    assert figures["p95_ms"] == pytest.approx(quantile(times_ms, 0.95), abs=0.05)
    assert 150 <= figures["p50_ms"] < 1000  # three calls of 50 ms each, generous for two busy cores
    assert figures["p50_ms"] % 10 and figures["p95_ms"] % 10  # Locust's buckets are whole tens from 100 ms on


@pytest.mark.timing
def test_distributed_locust_counts_the_workers_tickets(served_api, tmp_path):
    with served_api("async", FakeProvider(0.02)) as url:
        figures = run_locust(url, users=4, duration_s=3, workers=2, prefix=str(tmp_path / "spread"))
    assert figures["failures"] == 0 and figures["requests"] > 20
    assert len(list((tmp_path / "spread-times").glob("*.csv"))) == 2  # one per worker, none from the master
    assert 60 <= figures["p50_ms"] <= figures["p95_ms"]  # three calls of 20 ms each
    # a closed loop of 4 users at ~70 ms a ticket; generous for two busy cores
    assert 4 / 0.07 * 0.3 < figures["tickets_per_s"] < 4 / 0.06 * 1.1


@pytest.mark.timing
def test_a_workers_tickets_in_flight_at_the_end_count(served_api, tmp_path):
    provider = FakeProvider(0.2)
    with served_api("async", provider) as url:
        figures = run_locust(url, users=2, duration_s=2, workers=1, prefix=str(tmp_path / "end"))
    # each user is amid a ticket when the time is up: it finishes it during --stop-timeout, after the
    # master has quit (and printed its JSON without it); every ticket the provider served is counted
    assert figures["requests"] == len(provider.calls) // 3 > 2
    assert figures["failures"] == 0 and 600 <= figures["p50_ms"] <= figures["p95_ms"] < 3000


@pytest.mark.timing
def test_a_short_run_finds_async_near_its_limit_and_blocking_far_below(lab_database_url, tmp_path):
    result = run_module(
        "scripts.capacity",
        "--modes",
        "async,blocking",
        "--users",
        "4",
        "--duration",
        "5",
        "--speed",
        "0.05",
        "--json",
        "--out",
        str(tmp_path),
        env={"DATABASE_URL": lab_database_url},
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    free, blocking = figures["rows"]
    assert (free["mode"], blocking["mode"]) == ("async", "blocking")
    assert 0.1 < free["provider_s_per_ticket"] < 0.2  # about 2.2 s x 0.05
    assert 0.6 < free["of_limit"] <= 1.02
    assert blocking["tickets_per_s"] < 0.5 * free["tickets_per_s"]
    assert all(run["tickets_saved"] == run["requests"] for run in figures["runs"])
    for run in figures["runs"]:
        times_ms = [ms for ms, _ in read_ticket_times(tmp_path / "locust" / f"{run['mode']}-4u-1-times")]
        assert run["p50_ms"] == pytest.approx(quantile(times_ms, 0.5), abs=0.05)
    assert (tmp_path / "capacity.svg").exists() and (tmp_path / "capacity.csv").read_text().startswith("mode,users")
    assert not any(listening(run["simulator_url"]) or listening(run["api_url"]) for run in figures["runs"])
    assert sorted(path.name for path in tmp_path.glob("held-*")) == ["held-async-4u.svg", "held-blocking-4u.svg"]
    held = {run["mode"]: run["held"] for run in figures["runs"]}
    assert all(
        len(recording["rows"]) >= 10 and set(HELD_FIELDS) <= set(recording["rows"][0]) for recording in held.values()
    )
    assert held["async"]["peaks"]["sim_in_flight_max"] >= 2  # 4 users' calls, at once, most of the time
    assert held["blocking"]["peaks"]["lag_s_max"] > 3 * held["async"]["peaks"]["lag_s_max"]


def test_without_held_nothing_is_recorded_or_drawn(lab_database_url, tmp_path):
    result = run_module(
        "scripts.capacity",
        *("--modes", "async", "--users", "2", "--duration", "2", "--speed", "0.05", "--no-held", "--json"),
        *("--out", str(tmp_path)),
        env={"DATABASE_URL": lab_database_url},
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert "held" not in figures["runs"][0] and not list(tmp_path.glob("held-*"))
    assert "held:" not in result.stderr


@pytest.mark.timing
def test_a_run_with_a_locust_worker_has_its_percentiles(lab_database_url, tmp_path):
    result = run_module(
        "scripts.capacity",
        *("--modes", "async", "--users", "2", "--duration", "3", "--speed", "0.05", "--locust-processes", "1"),
        *("--no-held", "--json", "--out", str(tmp_path)),
        env={"DATABASE_URL": lab_database_url},
    )
    assert result.returncode == 0, result.stderr
    (run,) = json.loads(result.stdout)["runs"]
    assert run["tickets_saved"] == run["requests"] > 4  # the tickets in flight at the end included
    times_ms = [ms for ms, _ in read_ticket_times(tmp_path / "locust" / "async-2u-1-times")]
    assert run["p50_ms"] == pytest.approx(quantile(times_ms, 0.5), abs=0.05)
    assert run["p95_ms"] == pytest.approx(quantile(times_ms, 0.95), abs=0.05)
    assert 50 < run["p50_ms"] <= run["p95_ms"] < 2000  # about 2.2 s x 0.05 of provider time a ticket


def test_the_locust_plugins_rows_are_what_capacity_reads(tmp_path):
    # In a process of its own: the plugin imports locust, which patches its process with gevent.
    code = (
        "import sys\nfrom scripts.toolkit.load.request_times import record_request, times_file\n"
        "times_file.open(sys.argv[1])\nrecord_request('POST', '/v1/tickets', 2237.25, None)\n"
        "record_request('POST', '/v1/tickets', 18.5, ValueError())\nrecord_request('GET', '/health', 1.0, None)\n"
        "times_file.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=PROJECT_ROOT, check=True, timeout=120)
    assert read_ticket_times(tmp_path) == [(2237.25, True), (18.5, False)]
