"""Helpers of the reliability tests: tickets with markers, their rows, load, and the API's idle figures."""

import asyncio
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg

from scripts.toolkit.load.closed_loop import closed_loop, outcome_of
from scripts.toolkit.metrics import read_metrics
from tests.lab.tools.commands import run_module

IDLE = {"ticket_api_threads_borrowed": 0, "ticket_api_db_pool_in_use": 0, "ticket_api_provider_in_flight": 0}
MARKER = re.compile(r"\[([0-9a-f]{12})\]$")


def marked_ticket(customer_id: int, note: str = "") -> dict:
    """A valid ticket whose subject ends with a unique marker, to find its rows afterwards."""
    marker = uuid.uuid4().hex[:12]
    return {
        "customer_id": customer_id,
        "subject": f"Printer jams {note} [{marker}]".replace("  ", " "),
        "body": "It jams on every second page since the update.",
    }


def marker_of(ticket: dict) -> str:
    """The marker at the end of a marked ticket's subject."""
    return ticket["subject"].rsplit("[", 1)[1].rstrip("]")


def key_of(ticket: dict) -> dict[str, str]:
    """The Idempotency-Key header of a marked ticket: its marker."""
    return {"Idempotency-Key": marker_of(ticket)}


def rows_by_marker(conn: psycopg.Connection, customer_id: int) -> dict[str, list[tuple[int, bool]]]:
    """(id, has its AI results) of every saved ticket of the customer, by the marker in its subject."""
    saved: dict[str, list[tuple[int, bool]]] = {}
    for ticket_id, subject, complete in conn.execute(
        """SELECT t.id, t.subject, r.ticket_id IS NOT NULL FROM tickets t LEFT JOIN ticket_ai_results r
           ON r.ticket_id = t.id WHERE t.customer_id = %s ORDER BY t.id""",
        (customer_id,),
    ):
        marker = MARKER.search(subject)
        saved.setdefault(marker.group(1) if marker else subject, []).append((ticket_id, complete))
    return saved


def rows_of(conn: psycopg.Connection, ticket: dict) -> list[tuple[int, bool]]:
    """(id, has its AI results) of every saved ticket with this ticket's marker."""
    return conn.execute(
        """SELECT t.id, r.ticket_id IS NOT NULL FROM tickets t LEFT JOIN ticket_ai_results r ON r.ticket_id = t.id
           WHERE t.subject LIKE %s ORDER BY t.id""",
        (f"%[{marker_of(ticket)}]",),
    ).fetchall()


def assert_rows_match_answer(conn: psycopg.Connection, ticket: dict, answer: httpx.Response | None) -> None:
    """A 201 has exactly one complete row with the id it answered; any other outcome has none."""
    rows = rows_of(conn, ticket)
    if answer is not None and answer.status_code == 201:
        assert rows == [(answer.json()["id"], True)], (answer.text, rows)
    else:
        assert rows == [], (answer.text if answer is not None else "no answer", rows)


def metric_figures(url: str) -> dict[str, float]:
    """GET /metrics as {name: value} (labelled series of one name are added up)."""
    return read_metrics(httpx.get(f"{url}/metrics", timeout=10).text).totals()


def assert_idle(url: str, within_s: float = 5.0) -> None:
    """No thread-pool token, DB connection or provider call stays taken once the requests are answered."""
    deadline = time.monotonic() + within_s
    while True:
        busy = {name: value for name, value in metric_figures(url).items() if name in IDLE and value != IDLE[name]}
        if not busy:
            return
        assert time.monotonic() < deadline, f"still taken after the requests finished: {busy}"
        time.sleep(0.05)


def post_all(
    url: str,
    tickets: list[dict],
    concurrency: int,
    headers: dict | None = None,
    timeout_s: float = 60,
    keyed: bool = False,
) -> list[httpx.Response | Exception]:
    """POST every ticket, `concurrency` at a time, over a real connection each; the answers (or errors) in order.

    `keyed`: each ticket with its marker as Idempotency-Key.
    """

    async def post_each() -> list[httpx.Response | Exception]:
        slots = asyncio.Semaphore(concurrency)
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(base_url=url, timeout=timeout_s, limits=limits) as client:

            async def post(ticket: dict) -> httpx.Response | Exception:
                async with slots:
                    try:
                        return await client.post(
                            "/v1/tickets", json=ticket, headers=key_of(ticket) if keyed else headers
                        )
                    except httpx.TransportError as exc:
                        return exc

            return await asyncio.gather(*(post(ticket) for ticket in tickets))

    return asyncio.run(post_each())


@dataclass
class Sent:
    """One POST under load: the ticket, its answer (or the connection error) and how long it took."""

    ticket: dict
    answer: httpx.Response | Exception
    took_s: float


@contextmanager
def keyed_load(url: str, customer_id: int, clients: int) -> Iterator[list[Sent]]:
    """While the block runs, `clients` users each POST a new marked ticket (its marker as Idempotency-Key) as soon
    as their last is answered (the tools' closed loop); yields the list of answers, growing as they come."""
    sent: list[Sent] = []
    done = threading.Event()

    async def users() -> None:
        stop = asyncio.Event()

        async def stop_when_done() -> None:
            await asyncio.to_thread(done.wait)
            stop.set()

        limits = httpx.Limits(max_connections=clients)
        async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

            async def send():
                ticket, started = marked_ticket(customer_id), time.perf_counter()
                try:
                    answer: httpx.Response | httpx.TransportError = await client.post(
                        "/v1/tickets", json=ticket, headers=key_of(ticket)
                    )
                except httpx.TransportError as exc:
                    answer = exc
                sent.append(Sent(ticket, answer, time.perf_counter() - started))
                if isinstance(answer, Exception):
                    await asyncio.sleep(0.05)  # the API is gone: no busy loop until the block ends
                return outcome_of(answer)

            await asyncio.gather(closed_loop([send] * clients, stop=stop), stop_when_done())

    thread = threading.Thread(target=asyncio.run, args=(users(),))
    thread.start()
    try:
        yield sent
    finally:
        done.set()
        thread.join(timeout=90)


def wait_for(condition, timeout_s: float, what: str) -> None:
    """Poll `condition()` every 20 ms until it is true; fail the test after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:g} s"
        time.sleep(0.02)


def run_short_soak(out: Path, *flags: str, tickets: int, users: int, modes: str, quota: int) -> tuple[dict, str]:
    """`python -m scripts.soak` small and fast (speed 0.05, short hangs, 10% errors): its --json figures, its stderr."""
    result = run_module(
        "scripts.soak", *flags, "--tickets", str(tickets), "--users", str(users), "--modes", modes,
        "--speed", "0.05", "--provider-timeout", "0.5", "--hang-s", "2", "--error-rate", "0.1",
        "--hang-rate", "0.05", "--quota", str(quota), "--json", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr
