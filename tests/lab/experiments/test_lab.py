"""The /lab routes: what each answers, its bounds, the LAB_ROUTES switch, and how each way of waiting behaves."""

import asyncio
import multiprocessing
from datetime import datetime

import psutil
import pytest
from fastapi.testclient import TestClient

from scripts.toolkit.health import probe_health, times_ms
from scripts.toolkit.load import closed_loop, getter, open_client, open_clients
from scripts.toolkit.processes import free_port
from scripts.toolkit.quantiles import quantile
from tests.servers import serve
from ticket_api import lab
from ticket_api.config import Settings
from ticket_api.main import create_app

LAB_PATHS = sorted("/lab" + route.path for route in lab.router.routes)
SLEEP_PATHS = [
    "/lab/sleep/def",
    "/lab/sleep/async-blocking",
    "/lab/sleep/async",
    "/lab/sleep/threadpool",
    "/lab/sleep/to-thread",
]
CPU_PATHS = ["/lab/cpu/def", "/lab/cpu/async", "/lab/cpu/to-thread", "/lab/cpu/process"]
ROW_PATHS = ["/lab/rows/dicts", "/lab/rows/model", "/lab/rows/raw"]
UPSTREAM_PATHS = ["/lab/upstream/def", "/lab/upstream/async-blocking", "/lab/upstream/async"]


def test_the_lists_above_cover_every_lab_route():
    assert sorted([*SLEEP_PATHS, *CPU_PATHS, *ROW_PATHS, *UPSTREAM_PATHS, "/lab/noop/def"]) == LAB_PATHS


def test_every_lab_route_answers_404_with_the_lab_error_body_when_lab_routes_is_off(make_settings, fake_provider):
    with TestClient(create_app(make_settings(lab_routes=False), fake_provider)) as client:
        for path in LAB_PATHS:
            response = client.get(path)
            assert (response.status_code, response.json()["error"]) == (404, "not_found"), path


def test_the_lab_routes_are_off_by_default_and_out_of_the_schema_when_off(make_settings, fake_provider):
    assert Settings.model_fields["lab_routes"].default is False
    for on in (False, True):
        with TestClient(create_app(make_settings(lab_routes=on), fake_provider)) as client:
            schema = client.get("/openapi.json").json()
            listed = sorted(path for path in schema["paths"] if path.startswith("/lab/"))
            assert listed == (LAB_PATHS if on else [])
            assert ("LabRow" in schema["components"]["schemas"]) is on
            assert "/v1/tickets" in schema["paths"]


def test_the_trivial_def_route_answers_ok(client):
    assert client.get("/lab/noop/def").json() == {"ok": True}


@pytest.mark.parametrize("path", SLEEP_PATHS)
def test_each_sleep_route_waits_as_long_as_asked(client, path):
    response = client.get(path, params={"ms": 60})
    assert response.json() == {"waited_ms": 60}
    assert response.elapsed.total_seconds() >= 0.06


@pytest.mark.parametrize(
    "path",
    [
        "/lab/sleep/def?ms=-1",
        "/lab/sleep/async?ms=10001",
        "/lab/cpu/def?loops=10",
        "/lab/cpu/process?loops=5000001",
        "/lab/rows/raw?rows=0",
        "/lab/rows/dicts?rows=10001",
        "/lab/sleep/threadpool?ms=soon",
    ],
)
def test_sizes_out_of_bounds_are_refused_with_422(client, path):
    response = client.get(path)
    assert (response.status_code, response.json()["error"]) == (422, "validation_error")


def test_the_four_cpu_routes_compute_the_same_sum(client):
    expected = sum(i * i for i in range(2_000))
    for path in CPU_PATHS:
        assert client.get(path, params={"loops": 2_000}).json() == {"result": expected}, path


def test_the_process_pool_starts_on_first_use_and_its_workers_stop_with_the_app(make_settings, fake_provider):
    before = {process.pid for process in multiprocessing.active_children()}
    with TestClient(create_app(make_settings(), fake_provider)) as client:
        assert {process.pid for process in multiprocessing.active_children()} == before
        assert client.get("/lab/cpu/process", params={"loops": 1_000}).status_code == 200
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
    assert len(client.get("/lab/rows/raw").json()) == 500


@pytest.mark.parametrize("path", UPSTREAM_PATHS)
def test_each_upstream_route_reports_how_long_the_provider_took(make_settings, fake_provider, upstream, path):
    with TestClient(create_app(make_settings(provider_url=upstream.url), fake_provider)) as client:
        response = client.get(path)
    assert response.status_code == 200
    assert response.json()["upstream_ms"] >= upstream.delay_s * 1000 * 0.9


@pytest.mark.parametrize("provider", ["down", "failing"])
def test_a_provider_that_is_down_or_failing_makes_the_upstream_routes_answer_502(
    make_settings, fake_provider, upstream, provider
):
    if provider == "down":
        provider_url = f"http://127.0.0.1:{free_port()}/v1"
    else:
        provider_url = upstream.url.replace("/v1", "/failing/v1")
    with TestClient(create_app(make_settings(provider_url=provider_url), fake_provider)) as client:
        for path in UPSTREAM_PATHS:
            response = client.get(path)
            assert (response.status_code, response.json()["error"]) == (502, "ai_unavailable"), path


async def burst(url: str, path: str, count: int) -> tuple[float, float]:
    """`count` requests at once while /health is probed: (wall seconds, /health median ms)."""
    stop = asyncio.Event()
    async with open_client(url) as health_client, open_clients(url, count) as clients:
        await health_client.get("/health")
        prober = asyncio.create_task(probe_health(health_client, 0.02, stop))
        load = await closed_loop([getter(client, path) for client in clients], requests=count)
        stop.set()
        health_ms = times_ms(await prober)
    assert len(load.latencies_ms) == count, load.errors
    return load.wall_s, quantile(health_ms, 0.5)


def test_only_the_blocking_sleep_serialises_the_requests_and_stalls_health(make_settings, fake_provider):
    with serve(create_app(make_settings(), fake_provider)) as url:
        results = {path: asyncio.run(burst(url, f"{path}?ms=200", 5)) for path in SLEEP_PATHS}
    blocking_wall_s, blocking_health_ms = results.pop("/lab/sleep/async-blocking")
    assert blocking_wall_s >= 0.9  # 5 x 200 ms, one after another
    for path, (wall_s, health_ms) in results.items():
        assert wall_s * 2.5 < blocking_wall_s, path
        assert health_ms * 5 < blocking_health_ms, path


def test_only_the_blocking_client_serialises_the_upstream_calls(make_settings, fake_provider, upstream):
    with serve(create_app(make_settings(provider_url=upstream.url), fake_provider)) as url:
        walls = {path: asyncio.run(burst(url, path, 5))[0] for path in UPSTREAM_PATHS}
    assert walls["/lab/upstream/async-blocking"] >= 5 * upstream.delay_s * 0.9
    assert walls["/lab/upstream/def"] * 2.5 < walls["/lab/upstream/async-blocking"]
    assert walls["/lab/upstream/async"] * 2.5 < walls["/lab/upstream/async-blocking"]
