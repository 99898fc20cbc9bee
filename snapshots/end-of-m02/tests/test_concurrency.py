"""Four tickets at once in each INTAKE_MODE, with /health asked meanwhile (a fake provider, 0.2 s a call).

Each burst is judged against one ticket alone on the same server just before it: a busy machine
makes both slower together, so the ratios hold on a student's laptop as on a quiet one.
"""

import asyncio
import statistics
import time
from dataclasses import dataclass

import httpx
import pytest

from scripts.stall import probe_health, send_ticket, times_ms, waited_share
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
    """One ticket alone on a server, then a burst of tickets at once on the same server with /health asked."""

    alone_s: float  # one ticket alone, from sending it to its answer
    alone_ai_s: float  # of which its AI work, as the server timed it (Server-Timing `ai`)
    total_s: float  # the burst, from its start to its last answer
    statuses: list[int]
    probes: list[dict]  # each answer of /health: when it was asked (s from the start) and how long it took (ms)

    @property
    def health_ms(self) -> list[float]:
        """How long each GET /health took."""
        return times_ms(self.probes)


def ticket(n: int = 0) -> dict:
    """A new ticket of customer 1."""
    return {"customer_id": 1, "subject": f"Ticket {n}", "body": "Where is my parcel?"}


async def one_ticket_alone(url: str) -> tuple[float, float]:
    """Seconds for one ticket with nothing else going on, and its AI work's: the yardstick of this machine, now."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        sent = await send_ticket(client, 0, ticket(), time.perf_counter(), asyncio.Barrier(1))
    assert sent["status"] == 201
    return sent["end_s"] - sent["start_s"], sent["ai_ms"] / 1000


async def tickets_at_once(url: str) -> Run:
    """One ticket alone, then 4 that arrive together (as scripts.stall sends them) while GET /health is asked
    every 50 ms (the lab's /health prober)."""
    alone_s, alone_ai_s = await one_ticket_alone(url)
    async with (
        httpx.AsyncClient(base_url=url, timeout=30) as client,
        httpx.AsyncClient(base_url=url, timeout=30) as health_client,
    ):
        await asyncio.gather(*(client.get("/health") for _ in range(TICKETS)))  # a connection per ticket, open
        since, done, together = time.perf_counter(), asyncio.Event(), asyncio.Barrier(TICKETS)
        prober = asyncio.create_task(probe_health(health_client, 0.05, done, since))
        sent = await asyncio.gather(*(send_ticket(client, n, ticket(n), since, together) for n in range(TICKETS)))
        total_s = time.perf_counter() - since
        done.set()
        probes = await prober
    return Run(alone_s, alone_ai_s, total_s, [answer["status"] for answer in sent], probes)


@pytest.fixture(scope="module")
def runs(database_url) -> dict[str, Run]:
    """One burst per mode, measured on a real server in a thread."""
    measured = {}
    for mode in ("thread", "blocking", "async"):
        settings = load_settings(_env_file=None, database_url=database_url, intake_mode=mode, log_level="WARNING")
        with serve(create_app(settings, FakeProvider(CALL_S))) as url:
            measured[mode] = asyncio.run(tickets_at_once(url))
    return measured


def test_four_tickets_take_about_one_tickets_time_in_thread_mode(runs):
    assert runs["thread"].statuses == [201] * TICKETS
    assert runs["thread"].total_s < 1.5 * runs["thread"].alone_s  # ideally 1x: they wait together


def test_four_tickets_take_about_one_tickets_time_in_async_mode(runs):
    assert runs["async"].statuses == [201] * TICKETS
    assert runs["async"].total_s < 1.5 * runs["async"].alone_s  # ideally 1x: they wait together


def test_four_tickets_take_about_four_tickets_time_in_blocking_mode(runs):
    assert runs["blocking"].statuses == [201] * TICKETS
    assert runs["blocking"].total_s > 3 * runs["blocking"].alone_ai_s  # ideally 4x: one AI wait after another


def test_health_answers_in_milliseconds_in_thread_mode(runs):
    assert len(runs["thread"].health_ms) >= 5
    assert statistics.median(runs["thread"].health_ms) < 0.1 * runs["thread"].alone_s * 1000


def test_health_answers_in_milliseconds_in_async_mode(runs):
    assert len(runs["async"].health_ms) >= 5
    assert statistics.median(runs["async"].health_ms) < 0.1 * runs["async"].alone_s * 1000


def test_a_blocking_call_stalls_the_whole_server(runs):
    blocking = runs["blocking"]
    # /health does no work, yet it waited for other tickets' AI work: a whole ticket's at least,
    assert max(blocking.health_ms) > 0.75 * blocking.alone_ai_s * 1000
    # and one was waiting for most of the burst: the loop ran nothing else while a ticket waited.
    assert waited_share(blocking.probes, blocking.total_s) > 0.5


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
