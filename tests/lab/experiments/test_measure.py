"""The toolkit's measuring parts: the quantile, the closed loop, the /health prober and the small parsers."""

import argparse
import asyncio

import httpx
import pytest

from scripts.toolkit.answers import describe_failure, server_total_ms
from scripts.toolkit.cli import CommandError, parse_levels
from scripts.toolkit.health import check_api, probe_health
from scripts.toolkit.load import closed_loop, generator_saturated, getter, warm_up
from scripts.toolkit.quantiles import quantile, summarize


def test_quantile_interpolates_between_the_nearest_values():
    values = [40.0, 10.0, 30.0, 20.0]
    assert quantile(values, 0) == 10.0
    assert quantile(values, 0.5) == 25.0
    assert quantile(values, 1) == 40.0
    assert quantile([7.0], 0.99) == 7.0
    for empty_or_off_scale in (([], 0.5), (values, 50)):
        with pytest.raises(ValueError):
            quantile(*empty_or_off_scale)


def test_summarize_gives_the_figures_or_none_for_no_samples():
    summary = summarize([float(n) for n in range(1, 101)])
    assert summary["count"] == 100
    assert summary["p50"] == pytest.approx(50.5)
    assert summary["p99"] == pytest.approx(99.01)
    assert (summary["max"], summary["mean"]) == (100.0, 50.5)
    assert summarize([]) == {"count": 0, "p50": None, "p95": None, "p99": None, "max": None, "mean": None}


def test_a_generator_is_saturated_from_90_percent_of_a_core():
    assert generator_saturated(cpu_s=0.95, wall_s=1.0)
    assert not generator_saturated(cpu_s=0.5, wall_s=1.0)
    assert not generator_saturated(cpu_s=0.0, wall_s=0.0)


def test_levels_parse_as_positive_integers():
    assert parse_levels("1,8, 24,64") == [1, 8, 24, 64]
    for bad in ("", "0,8", "a,b", "-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_levels(bad)


def test_server_timing_total_is_read_when_the_api_sends_it():
    timed = httpx.Response(200, headers={"Server-Timing": "db;dur=1.0, ai;dur=0.0, other;dur=0.5, total;dur=1.5"})
    assert server_total_ms(timed) == 1.5
    assert server_total_ms(httpx.Response(200)) is None


def test_failures_are_described_by_status_and_error_code_or_by_exception():
    assert describe_failure(httpx.Response(503, json={"error": "ai_busy", "detail": "..."})) == "503 ai_busy"
    assert describe_failure(httpx.Response(500, text="oops")) == "500"
    assert describe_failure(httpx.ConnectError("refused")) == "ConnectError"


def fake_api(statuses: list[int]) -> httpx.MockTransport:
    """Answers GET /work with the given statuses in turn (then 200), /health with 200."""
    answers = iter(statuses)

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/work":
            status = next(answers, 200)
            return httpx.Response(status, json={"error": "db_busy"} if status >= 400 else {"ok": True})
        return httpx.Response(200, json={"status": "ok"})

    return httpx.MockTransport(handle)


def test_the_closed_loop_sends_exactly_the_requests_asked_and_counts_failures():
    async def run():
        transport = fake_api([200, 503, 200])
        clients = [httpx.AsyncClient(transport=transport, base_url="http://api") for _ in range(3)]
        try:
            return await closed_loop([getter(client, "/work") for client in clients], requests=10)
        finally:
            for client in clients:
                await client.aclose()

    load = asyncio.run(run())
    assert (len(load.latencies_ms), load.errors) == (9, ["503 db_busy"])
    assert load.rps > 0 and load.wall_s > 0


def test_the_closed_loop_stops_at_its_duration():
    async def run():
        async with httpx.AsyncClient(transport=fake_api([]), base_url="http://api") as client:
            return await closed_loop([getter(client, "/work")], duration_s=0.2)

    load = asyncio.run(run())
    assert 0.2 <= load.wall_s < 1.0
    assert len(load.latencies_ms) > 10


def test_the_prober_samples_until_stopped_and_keeps_failures_apart():
    async def run():
        stop, errors = asyncio.Event(), []
        async with httpx.AsyncClient(transport=fake_api([500]), base_url="http://api") as client:
            prober = asyncio.create_task(probe_health(client, 0.01, stop, path="/work", errors=errors))
            await asyncio.sleep(0.2)
            stop.set()
            return await prober, errors

    samples, errors = asyncio.run(run())
    assert errors == ["500 db_busy"]
    assert len(samples) >= 5


def test_an_api_that_does_not_answer_is_a_one_line_command_error():
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    async def run():
        async with httpx.AsyncClient(transport=httpx.MockTransport(refuse), base_url="http://api") as client:
            await check_api(client)

    with pytest.raises(CommandError, match="cannot reach the API at http://api"):
        asyncio.run(run())


def test_warm_up_refuses_a_route_that_fails_from_the_start():
    async def run():
        async with httpx.AsyncClient(transport=fake_api([404]), base_url="http://api") as client:
            await warm_up([client], "/work")

    with pytest.raises(CommandError, match="GET /work answered 404"):
        asyncio.run(run())
