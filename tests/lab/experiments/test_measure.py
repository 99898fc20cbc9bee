"""The toolkit's measuring parts: the quantile, the closed loop, the /health prober and the small parsers."""

import argparse
import asyncio
import time

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from scripts.stall import HealthProbes, check_api, describe_failure, probe_health
from scripts.toolkit.cli import CommandError
from scripts.toolkit.commands.options import parse_levels
from scripts.toolkit.load.closed_loop import (
    Load,
    Outcome,
    Send,
    closed_loop,
    getter,
    server_total_ms,
    session,
    warm_up,
)
from scripts.toolkit.measure.quantiles import percentiles, quantile
from tests.servers import serve


def test_quantile_interpolates_between_the_nearest_values():
    values = [40.0, 10.0, 30.0, 20.0]
    assert quantile(values, 0) == 10.0
    assert quantile(values, 0.5) == 25.0
    assert quantile(values, 1) == 40.0
    assert quantile([7.0], 0.99) == 7.0
    for empty_or_off_scale in (([], 0.5), (values, 50)):
        with pytest.raises(ValueError):
            quantile(*empty_or_off_scale)


def test_percentiles_give_the_figures_or_none_for_no_samples():
    summary = percentiles([float(n) for n in range(1, 101)])
    assert summary["count"] == 100
    assert summary["p50"] == pytest.approx(50.5)
    assert summary["p99"] == pytest.approx(99.01)
    assert (summary["max"], summary["mean"]) == (100.0, 50.5)
    assert percentiles([]) == {"count": 0, "p50": None, "p95": None, "p99": None, "max": None, "mean": None}


def test_a_generator_is_saturated_from_90_percent_of_a_core():
    assert Load([], 0.0, wall_s=1.0, cpu_s=0.95).saturated
    assert not Load([], 0.0, wall_s=1.0, cpu_s=0.5).saturated
    assert not Load([], 0.0, wall_s=0.0, cpu_s=0.0).saturated


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


def work_app(statuses: list[int]) -> Starlette:
    """Answers GET /work with the given statuses in turn (then 200), taking 10 ms each, with Server-Timing."""
    answers = iter(statuses)

    async def work(request: Request) -> JSONResponse:
        await asyncio.sleep(0.01)
        status = next(answers, 200)
        body = {"error": "db_busy"} if status >= 400 else {"ok": True}
        return JSONResponse(body, status, headers={"Server-Timing": "total;dur=10.5"})

    return Starlette(routes=[Route("/work", work)])


def run_load(statuses: list[int], users: int, **until: float) -> Load:
    """The closed loop of `users` on one session against work_app(statuses), until `until`."""

    async def load(url: str) -> Load:
        async with session(url, users) as opened:
            return await closed_loop([getter(opened, "/work")] * users, **until)

    with serve(work_app(statuses)) as url:
        return asyncio.run(load(url))


@pytest.mark.timing
def test_the_closed_loop_sends_exactly_the_requests_asked_and_counts_failures():
    load = run_load([200, 503, 200], users=3, requests=10)
    assert (len(load.latencies_ms), load.errors) == (9, ["503 db_busy"])
    assert load.server_ms == [10.5] * 9 and all(ms >= 10 for ms in load.latencies_ms)
    assert load.rps > 0 and load.wall_s > 0


@pytest.mark.timing
def test_the_closed_loop_stops_at_its_duration():
    load = run_load([], users=2, duration_s=0.2)
    assert 0.2 <= load.wall_s < 1.0
    assert len(load.latencies_ms) > 10


@pytest.mark.timing
def test_the_users_first_requests_are_spread_over_the_ramp_and_the_duration_follows_it():
    firsts: dict[int, float] = {}

    def user(number: int) -> Send:
        async def send() -> Outcome:
            firsts.setdefault(number, time.perf_counter())
            await asyncio.sleep(0.01)
            return Outcome(True)

        return send

    load = asyncio.run(closed_loop([user(number) for number in range(4)], duration_s=0.2, ramp_s=0.4))
    offsets = [firsts[number] - load.began for number in range(4)]
    assert all(0.1 * number <= offset < 0.1 * number + 0.3 for number, offset in enumerate(offsets)), offsets
    assert 0.6 <= load.wall_s < 1.5  # the ramp, then the duration
    early = load.ended_within(load.began, load.began + 0.09)  # one user alone, 10 ms a call: 9 at most
    assert 1 <= len(early) <= 9


@pytest.mark.timing
def test_the_closed_loop_gives_up_on_calls_a_stuck_server_never_answers():
    async def stuck() -> Outcome:
        await asyncio.sleep(60)
        return Outcome(True)

    load = asyncio.run(closed_loop([stuck, stuck], duration_s=0.1, give_up_s=0.1))
    assert load.wall_s < 1 and load.calls == [] and load.given_up == 2


def test_the_prober_samples_until_stopped_and_keeps_failures_apart():
    statuses = iter([500])

    def health(request: httpx.Request) -> httpx.Response:
        status = next(statuses, 200)
        return httpx.Response(status, json={"error": "db_busy"} if status >= 400 else {"status": "ok"})

    async def run():
        stop, seen = asyncio.Event(), HealthProbes(time.perf_counter())
        async with httpx.AsyncClient(transport=httpx.MockTransport(health), base_url="http://api") as client:
            prober = asyncio.create_task(probe_health(client, 0.01, stop, seen=seen))
            await asyncio.sleep(0.2)
            stop.set()
            return await prober, seen.errors

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
    async def warm(url: str) -> None:
        async with session(url, 1) as opened:
            await warm_up(opened, "/work")

    with serve(work_app([404])) as url, pytest.raises(CommandError, match="GET /work answered 404"):
        asyncio.run(warm(url))
