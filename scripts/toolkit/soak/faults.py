"""The soak's load with its faults: the tickets on the closed loop, a restart (or a crash) of the API when half
have started, and with --kill a crash of PostgreSQL when three quarters have.

Each ticket is retried with its Idempotency-Key after a connection error, a timeout or a 503
db_unavailable, as a careful client would; its Journey keeps what happened on the way.
"""

import asyncio
import functools
import time
from collections.abc import Callable

import aiohttp
import orjson

from scripts.toolkit.answers import error_code
from scripts.toolkit.cli import progress
from scripts.toolkit.commands.options import Clock
from scripts.toolkit.load.closed_loop import JSON, NO_ANSWER, Outcome, Reply, closed_loop, fetch, session
from scripts.toolkit.soak.audit import Journey

# Far above an answer of thread or async mode; a blocked event loop (INTAKE_MODE=blocking) with 64
# tickets queued and hangs among them can take longer: that ticket is retried with its key.
CLIENT_TIMEOUT_S = 120
RETRY_PAUSE_S = 0.2
RETRY_FOR_S = 60  # after a ticket's first connection error or timeout, how long it keeps trying


async def send_all(
    url: str,
    tickets: list[dict],
    users: int,
    restart: Callable[[], dict],
    clock: Clock,
    crash_db: Callable[[], dict] | None = None,
) -> tuple[list[Journey], dict]:
    """Send the tickets, `users` at a time; when half have started, `restart()` runs in a thread, and when three
    quarters have, `crash_db()` (--kill) too."""
    outcomes = [Journey(number, ticket["key"]) for number, ticket in enumerate(tickets, start=1)]
    waiting = list(zip(tickets, outcomes, strict=False))
    running: set[int] = set()
    restart_after, crash_after = max(1, len(tickets) // 2), max(1, len(tickets) * 3 // 4)
    restart_due, crash_due = asyncio.Event(), asyncio.Event()
    step = max(1, len(tickets) // 10)

    async def send_next(client: aiohttp.ClientSession) -> Outcome:
        ticket, outcome = waiting.pop(0)
        running.add(outcome.number)
        if outcome.number == restart_after:
            restart_due.set()
        if outcome.number == crash_after:
            crash_due.set()
        await send_one(client, ticket, outcome)
        running.discard(outcome.number)
        answered = len(tickets) - len(waiting) - len(running)
        if answered % step == 0:
            created = sum(1 for o in outcomes if o.status == 201)
            progress(f"[{clock}]   {answered}/{len(tickets)} answered, {created} created")
        return Outcome(outcome.status == 201, outcome.error)

    async def restarter() -> dict:
        await restart_due.wait()
        in_flight = sorted(running)
        for number in in_flight:
            outcomes[number - 1].in_flight_at_restart = True
        progress(
            f"[{clock}]   {'SIGKILL' if crash_db else 'SIGTERM'} to the API after ticket {restart_after} started, "
            f"{len(in_flight)} in flight"
        )
        info = await asyncio.to_thread(restart)
        progress(
            f"[{clock}]   the API stopped in {info['stop_s']:.1f} s, the new one listened {info['start_s']:.1f} s later"
        )
        return {"after_ticket": restart_after, "in_flight": in_flight, **info}

    async def crasher(crash: Callable[[], dict]) -> dict:
        await crash_due.wait()
        await restarting  # one failure at a time
        in_flight = len(running)
        progress(
            f"[{clock}]   SIGKILL to PostgreSQL's postmaster after ticket {crash_after} started, {in_flight} in flight"
        )
        info = await asyncio.to_thread(crash)
        progress(f"[{clock}]   PostgreSQL started again {info['down_s']:.1f} s after its crash")
        return {"after_ticket": crash_after, "in_flight": in_flight, **info}

    async with session(url, users, CLIENT_TIMEOUT_S) as client:
        try:
            async with asyncio.TaskGroup() as group:  # a failed restart stops the users at once
                restarting = group.create_task(restarter())
                crashing = group.create_task(crasher(crash_db)) if crash_db else None
                group.create_task(closed_loop([functools.partial(send_next, client)] * users, requests=len(tickets)))
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
    return outcomes, {**restarting.result(), **({"postgres": crashing.result()} if crashing else {})}


async def send_one(client: aiohttp.ClientSession, ticket: dict, outcome: Journey) -> None:
    """POST the ticket; a connection error, timeout or 503 db_unavailable is retried with the same Idempotency-Key
    for RETRY_FOR_S."""
    body = orjson.dumps({name: value for name, value in ticket.items() if name != "key"})
    headers = {**JSON, "Idempotency-Key": ticket["key"]}
    give_up_at = None
    while True:
        outcome.sent_at = time.time()
        response: Reply | None = None
        try:
            response = await fetch(client, "POST", "/v1/tickets", data=body, headers=headers)
            # The database was lost, perhaps right after the commit: only a retry can tell.
            failure = "db_unavailable" if error_code(response) == "db_unavailable" else None
        except NO_ANSWER as exc:  # timeouts included
            failure = type(exc).__name__
        if failure is not None:
            outcome.connection_errors.append(failure)
            give_up_at = give_up_at or time.monotonic() + RETRY_FOR_S
            if time.monotonic() < give_up_at:
                await asyncio.sleep(RETRY_PAUSE_S)
                continue
        if response is None:
            outcome.error = failure
            return
        outcome.status, outcome.error = response.status_code, error_code(response)
        if response.status_code == 201:
            outcome.ticket_id = response.json()["id"]
        return
