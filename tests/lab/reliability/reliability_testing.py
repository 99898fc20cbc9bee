"""Helpers of the reliability tests: tickets with markers, their rows, and the API's idle figures."""

import asyncio
import time
import uuid

import httpx
import psycopg

from scripts.toolkit.metrics import metric_totals

MODES = ("thread", "blocking", "async")
IDLE = {"ticket_api_threads_borrowed": 0, "ticket_api_db_pool_in_use": 0, "ticket_api_provider_in_flight": 0}


def marked_ticket(customer_id: int, note: str = "") -> dict:
    """A valid ticket whose subject ends with a unique marker, to find its rows afterwards."""
    marker = uuid.uuid4().hex[:12]
    return {"customer_id": customer_id, "subject": f"Printer jams {note} [{marker}]".replace("  ", " "),
            "body": "It jams on every second page since the update."}


def marker_of(ticket: dict) -> str:
    """The marker at the end of a marked ticket's subject."""
    return ticket["subject"].rsplit("[", 1)[1].rstrip("]")


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
    return metric_totals(httpx.get(f"{url}/metrics", timeout=10).text)


def assert_idle(url: str, within_s: float = 5.0) -> None:
    """No thread-pool token, DB connection or provider call stays taken once the requests are answered."""
    deadline = time.monotonic() + within_s
    while True:
        busy = {name: value for name, value in metric_figures(url).items() if name in IDLE and value != IDLE[name]}
        if not busy:
            return
        assert time.monotonic() < deadline, f"still taken after the requests finished: {busy}"
        time.sleep(0.05)


def post_all(url: str, tickets: list[dict], concurrency: int, headers: dict | None = None,
             timeout_s: float = 60) -> list[httpx.Response | Exception]:
    """POST every ticket, `concurrency` at a time, over a real connection each; the answers (or errors) in order."""

    async def post_each() -> list[httpx.Response | Exception]:
        slots = asyncio.Semaphore(concurrency)
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(base_url=url, timeout=timeout_s, limits=limits) as client:

            async def post(ticket: dict) -> httpx.Response | Exception:
                async with slots:
                    try:
                        return await client.post("/v1/tickets", json=ticket, headers=headers)
                    except httpx.TransportError as exc:
                        return exc

            return await asyncio.gather(*(post(ticket) for ticket in tickets))

    return asyncio.run(post_each())
