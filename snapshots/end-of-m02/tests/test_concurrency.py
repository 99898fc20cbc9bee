"""Four tickets at once in each INTAKE_MODE, with /health asked meanwhile (a fake provider, 0.2 s a call)."""

import asyncio
import statistics
import time
from dataclasses import dataclass

import httpx
import pytest

from scripts.toolkit.health import probe_health, times_ms
from tests.fakes import FakeProvider
from tests.servers import serve
from ticket_api.config import Settings, load_settings
from ticket_api.errors import StartupError
from ticket_api.main import create_app
from ticket_api.provider import Provider

CALL_S = 0.2  # so one ticket waits 3 x 0.2 s: classify, draft, embed
TICKETS = 4


@dataclass
class Run:
    """What one burst of tickets measured, and one ticket alone on the same server before it."""

    alone_s: float
    total_s: float
    statuses: list[int]
    health_ms: list[float]


def ticket(n: int = 0) -> dict:
    """A new ticket of customer 1."""
    return {"customer_id": 1, "subject": f"Ticket {n}", "body": "Where is my parcel?"}


def create_ticket(url: str) -> int:
    """POST one ticket; its status code."""
    return httpx.post(f"{url}/v1/tickets", json=ticket(), timeout=30).status_code


def one_ticket_alone(url: str) -> float:
    """Seconds for one ticket with nothing else going on: the yardstick of this machine, right now."""
    started = time.perf_counter()
    assert create_ticket(url) == 201
    return time.perf_counter() - started


async def four_tickets_at_once(url: str, alone_s: float) -> Run:
    """Send 4 tickets at the same moment while GET /health is asked every 50 ms (the lab's /health prober)."""
    async with (
        httpx.AsyncClient(base_url=url, timeout=30) as client,
        httpx.AsyncClient(base_url=url, timeout=30) as health_client,
    ):
        done = asyncio.Event()
        prober = asyncio.create_task(probe_health(health_client, 0.05, done))
        started = time.perf_counter()
        answers = await asyncio.gather(*(client.post("/v1/tickets", json=ticket(n)) for n in range(TICKETS)))
        total_s = time.perf_counter() - started
        done.set()
        health_ms = times_ms(await prober)
    return Run(alone_s, total_s, [answer.status_code for answer in answers], health_ms)


@pytest.fixture(scope="module")
def runs(database_url) -> dict[str, Run]:
    """One burst per mode, measured on a real server in a thread."""
    measured = {}
    for mode in ("thread", "blocking", "async"):
        settings = load_settings(_env_file=None, database_url=database_url, intake_mode=mode, log_level="WARNING")
        with serve(create_app(settings, FakeProvider(CALL_S))) as url:
            measured[mode] = asyncio.run(four_tickets_at_once(url, one_ticket_alone(url)))
    return measured


def test_four_tickets_take_about_one_tickets_time_in_thread_mode(runs):
    assert runs["thread"].statuses == [201] * TICKETS
    assert runs["thread"].total_s < 2 * runs["thread"].alone_s  # ideally 1x: they wait together


def test_four_tickets_take_about_one_tickets_time_in_async_mode(runs):
    assert runs["async"].statuses == [201] * TICKETS
    assert runs["async"].total_s < 2 * runs["async"].alone_s  # ideally 1x: they wait together


def test_four_tickets_take_about_four_tickets_time_in_blocking_mode(runs):
    assert runs["blocking"].statuses == [201] * TICKETS
    assert runs["blocking"].total_s > 2.5 * runs["blocking"].alone_s  # ideally 4x: one after another
    assert runs["blocking"].total_s > 2 * runs["async"].total_s


def test_health_answers_in_milliseconds_in_thread_mode(runs):
    assert len(runs["thread"].health_ms) >= 5
    assert statistics.median(runs["thread"].health_ms) < 0.1 * runs["thread"].alone_s * 1000


def test_health_answers_in_milliseconds_in_async_mode(runs):
    assert len(runs["async"].health_ms) >= 5
    assert statistics.median(runs["async"].health_ms) < 0.1 * runs["async"].alone_s * 1000


def test_a_blocking_call_stalls_the_whole_server(runs):
    blocking, free = runs["blocking"].health_ms, runs["async"].health_ms
    # /health does no work, yet it waited for other tickets' AI work, like a whole ticket or more.
    assert statistics.median(blocking) > 0.5 * runs["blocking"].alone_s * 1000
    assert statistics.median(blocking) > 20 * statistics.median(free)


def test_an_unknown_intake_mode_stops_the_start_up():
    with pytest.raises(StartupError, match="INTAKE_MODE='fast'.*'thread', 'blocking' or 'async'"):
        load_settings(_env_file=None, intake_mode="fast")


def test_async_is_the_default_intake_mode():
    assert Settings.model_fields["intake_mode"].default == "async"


def test_acall_includes_the_wait_for_a_free_slot():
    async def slow_answer(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(CALL_S)
        return httpx.Response(200, json={"ok": True})

    settings = load_settings(_env_file=None, provider_max_concurrency=1)
    provider = Provider(settings, transport=httpx.MockTransport(slow_answer))

    async def two_calls_at_once() -> list[tuple[dict, float]]:
        try:
            return await asyncio.gather(provider.acall("/embeddings", {}), provider.acall("/embeddings", {}))
        finally:
            await provider.aclose()

    results = asyncio.run(two_calls_at_once())
    assert [answer for answer, _ in results] == [{"ok": True}, {"ok": True}]
    assert sorted(ms for _, ms in results)[1] >= 1.8 * CALL_S * 1000  # the second waited for the first
