"""The experiment app's routes: what each answers, its bounds, and how each way of waiting behaves."""

import asyncio
import gc
import multiprocessing
from collections.abc import Iterator
from datetime import datetime

import httpx
import psutil
import pytest
from fastapi.testclient import TestClient

from scripts.experiments.app import app, create_app
from scripts.experiments.settings import ExperimentSettings
from scripts.stall import probe_health, times_ms
from scripts.toolkit.load.closed_loop import Load, closed_loop, getter, session
from scripts.toolkit.measure.quantiles import quantile
from scripts.toolkit.processes import free_port
from tests.servers import serve

SLEEP_PATHS = ["/sleep/def", "/sleep/async-blocking", "/sleep/async", "/sleep/threadpool", "/sleep/to-thread"]
CPU_PATHS = ["/cpu/def", "/cpu/async", "/cpu/to-thread", "/cpu/process"]
ROW_PATHS = ["/rows/dicts", "/rows/model", "/rows/raw"]
UPSTREAM_PATHS = ["/upstream/def", "/upstream/async-blocking", "/upstream/async"]


def test_the_lists_above_cover_every_route_of_the_app(client):
    listed = sorted(client.get("/openapi.json").json()["paths"])
    assert sorted([*SLEEP_PATHS, *CPU_PATHS, *ROW_PATHS, *UPSTREAM_PATHS, "/noop/def", "/health"]) == listed


def test_health_answers_ok_and_the_trivial_def_route_too(client):
    assert client.get("/health").json() == {"status": "ok"}
    assert client.get("/noop/def").json() == {"ok": True}


def test_an_unknown_path_such_as_the_old_lab_prefix_gets_404_not_found(client):
    response = client.get("/lab/sleep/def")
    assert (response.status_code, response.json()["error"]) == (404, "not_found")


@pytest.mark.timing
@pytest.mark.parametrize("path", SLEEP_PATHS)
def test_each_sleep_route_waits_as_long_as_asked(client, path):
    response = client.get(path, params={"ms": 60})
    assert response.json() == {"waited_ms": 60}
    assert response.elapsed.total_seconds() >= 0.06


@pytest.mark.parametrize(
    "path",
    [
        "/sleep/def?ms=-1",
        "/sleep/async?ms=10001",
        "/cpu/def?loops=10",
        "/cpu/process?loops=5000001",
        "/rows/raw?rows=0",
        "/rows/dicts?rows=10001",
        "/sleep/threadpool?ms=soon",
    ],
)
def test_sizes_out_of_bounds_are_refused_with_422(client, path):
    response = client.get(path)
    assert (response.status_code, response.json()["error"]) == (422, "validation_error")


def test_the_four_cpu_routes_compute_the_same_sum(client):
    expected = sum(i * i for i in range(2_000))
    for path in CPU_PATHS:
        assert client.get(path, params={"loops": 2_000}).json() == {"result": expected}, path


def test_the_process_pool_starts_on_first_use_and_its_workers_stop_with_the_app():
    before = {process.pid for process in multiprocessing.active_children()}
    with TestClient(create_app(ExperimentSettings())) as client:
        assert {process.pid for process in multiprocessing.active_children()} == before
        assert client.get("/cpu/process", params={"loops": 1_000}).status_code == 200
        workers = {process.pid for process in multiprocessing.active_children()} - before
        assert workers
    assert not any(psutil.pid_exists(pid) for pid in workers)


def test_the_three_row_routes_send_the_same_rows_as_json(client):
    answers = [client.get(path, params={"rows": 3}) for path in ROW_PATHS]
    assert {answer.headers["content-type"] for answer in answers} == {"application/json"}
    # The serializers write the same instant differently (+00:00 or Z): compare the values.
    rows = [
        [{**row, "created_at": datetime.fromisoformat(row["created_at"])} for row in answer.json()]
        for answer in answers
    ]
    assert rows[0] == rows[1] == rows[2]
    assert [row["id"] for row in rows[0]] == [1, 2, 3]
    assert set(rows[0][0]) == {"id", "customer_id", "subject", "status", "priority", "created_at"}


def test_a_row_route_sends_500_rows_by_default(client):
    assert len(client.get("/rows/raw").json()) == 500


@pytest.mark.timing
@pytest.mark.parametrize("path", UPSTREAM_PATHS)
def test_each_upstream_route_reports_how_long_the_provider_took(upstream, path):
    with TestClient(create_app(ExperimentSettings(provider_url=upstream.url))) as client:
        response = client.get(path)
    assert response.status_code == 200
    assert response.json()["upstream_ms"] >= upstream.delay_s * 1000 * 0.9


@pytest.mark.parametrize("provider", ["down", "failing"])
def test_a_provider_that_is_down_or_failing_makes_the_upstream_routes_answer_502(upstream, provider):
    if provider == "down":
        provider_url = f"http://127.0.0.1:{free_port()}/v1"
    else:
        provider_url = upstream.url.replace("/v1", "/failing/v1")
    with TestClient(create_app(ExperimentSettings(provider_url=provider_url))) as client:
        for path in UPSTREAM_PATHS:
            response = client.get(path)
            assert (response.status_code, response.json()["error"]) == (502, "ai_unavailable"), path


@pytest.fixture
def without_gc_pauses() -> Iterator[None]:
    """The garbage collector off while bursts are timed.

    The server runs in the test's own process, where a full collection of pytest's heap paused everything
    0.3-0.5 s on a busy machine: as long as a whole burst of 200 ms sleeps.
    """
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def burst(url: str, path: str, count: int) -> tuple[Load, float]:
    """`count` requests at once while /health is probed: (the load's figures, /health median ms)."""
    stop = asyncio.Event()
    async with httpx.AsyncClient(base_url=url) as health_client, session(url, count) as opened:
        await health_client.get("/health")
        prober = asyncio.create_task(probe_health(health_client, 0.02, stop))
        load = await closed_loop([getter(opened, path)] * count, requests=count)
        stop.set()
        health_ms = times_ms(await prober)
    assert len(load.latencies_ms) == count, load.errors
    return load, quantile(health_ms, 0.5)


def spread_ms(load: Load) -> float:
    """How far apart a burst's requests finished: about 0 when they ran together, their waits added when serialised.

    Unlike the wall time, a pause of the whole process moves every request in flight alike and leaves this alone.
    """
    return max(load.latencies_ms) - min(load.latencies_ms)


@pytest.mark.timing
@pytest.mark.usefixtures("without_gc_pauses")
def test_only_the_blocking_sleep_serialises_the_requests_and_stalls_health():
    with serve(create_app(ExperimentSettings())) as url:
        results = {path: asyncio.run(burst(url, f"{path}?ms=500", 5)) for path in SLEEP_PATHS}
    blocking, blocking_health_ms = results.pop("/sleep/async-blocking")
    assert spread_ms(blocking) >= 0.9 * 4 * 500  # 5 x 500 ms, one after another
    # Each /health waits out a blocking sleep (500 ms); on a busy machine an async one took up to 79 ms.
    for path, (load, health_ms) in results.items():
        assert spread_ms(load) * 2 < spread_ms(blocking), path
        assert health_ms * 3 < blocking_health_ms, path


@pytest.mark.timing
@pytest.mark.usefixtures("without_gc_pauses")
def test_only_the_blocking_client_serialises_the_upstream_calls(upstream):
    with serve(create_app(ExperimentSettings(provider_url=upstream.url))) as url:
        loads = {path: asyncio.run(burst(url, path, 5))[0] for path in UPSTREAM_PATHS}
    blocking = loads.pop("/upstream/async-blocking")
    assert spread_ms(blocking) >= 0.9 * 4 * upstream.delay_s * 1000  # 5 calls, one after another
    for path, load in loads.items():
        assert spread_ms(load) * 2 < spread_ms(blocking), path


@pytest.mark.timing
@pytest.mark.usefixtures("without_gc_pauses")
def test_the_app_reads_thread_limit_from_the_environment_when_it_starts_not_at_import(monkeypatch):
    monkeypatch.setenv("THREAD_LIMIT", "2")  # `app` was made at import, before this
    with serve(app) as url:
        two_threads, _ = asyncio.run(burst(url, "/sleep/def?ms=200", 6))
    assert spread_ms(two_threads) >= 0.9 * 2 * 200  # 6 x 200 ms, 2 at a time: three rounds
    # Six at once: one round, and a fresh pool's six threads to start; were the limit still 2, three rounds again.
    with serve(create_app(ExperimentSettings(thread_limit=6))) as url:
        six_threads, _ = asyncio.run(burst(url, "/sleep/def?ms=200", 6))
    assert spread_ms(six_threads) * 2 < spread_ms(two_threads)


def test_settings_come_from_the_environment_and_bad_ones_are_named():
    assert ExperimentSettings.from_environment({}) == ExperimentSettings("http://127.0.0.1:8100/v1", 40, "WARNING")
    environ = {"PROVIDER_URL": "http://127.0.0.1:9/v1/", "THREAD_LIMIT": "100", "LOG_LEVEL": "info"}
    settings = ExperimentSettings.from_environment(environ)
    assert settings == ExperimentSettings("http://127.0.0.1:9/v1", 100, "INFO")
    assert ExperimentSettings.from_environment(settings.environment()) == settings
    for bad in ({"THREAD_LIMIT": "0"}, {"THREAD_LIMIT": "many"}, {"LOG_LEVEL": "loud"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ExperimentSettings.from_environment(bad)
