"""The soak's load with its faults: the tickets on the closed loop (each retried as `send_one` says, its Journey
keeping what happened on the way), a restart (or a crash) of the API when half have started, and with --kill a crash
of PostgreSQL when three quarters have."""

import asyncio
import functools
import time
from collections.abc import Callable

import aiohttp
import orjson

from scripts.toolkit.answers import error_code
from scripts.toolkit.cli import progress
from scripts.toolkit.commands.options import Clock
from scripts.toolkit.load.closed_loop import JSON, NO_ANSWER, Outcome, Reply, Send, closed_loop, fetch, session
from scripts.toolkit.soak.audit import Journey

# Far above an answer of thread or async mode; a blocked event loop (INTAKE_MODE=blocking) with 64
# tickets queued and hangs among them can take longer: that ticket is retried with its key.
CLIENT_TIMEOUT_S = 120
RETRY_PAUSE_S = 0.2
RETRY_FOR_S = 60  # after a ticket's first connection error or timeout, how long it keeps trying


class Journeys:
    """The soak's tickets on their way: those still to send, those in flight, and when the restart and the crash are
    due (when half, and three quarters, have started)."""

    def __init__(self, tickets: list[dict], clock: Clock):
        self.tickets, self.clock = tickets, clock
        self.outcomes = [Journey(number, ticket["key"]) for number, ticket in enumerate(tickets, start=1)]
        self.waiting = list(zip(tickets, self.outcomes, strict=True))
        self.restart_after, self.crash_after = max(1, len(tickets) // 2), max(1, len(tickets) * 3 // 4)
        self.running: set[int] = set()
        self.restart_due, self.crash_due = asyncio.Event(), asyncio.Event()

    async def send_next(self, client: aiohttp.ClientSession) -> Outcome:
        """Send the next ticket (retried as send_one does); a progress line every tenth of them answered."""
        ticket, outcome = self.waiting.pop(0)
        self.running.add(outcome.number)
        if outcome.number == self.restart_after:
            self.restart_due.set()
        if outcome.number == self.crash_after:
            self.crash_due.set()
        await send_one(client, ticket, outcome)
        self.running.discard(outcome.number)
        answered = len(self.tickets) - len(self.waiting) - len(self.running)
        if answered % max(1, len(self.tickets) // 10) == 0:
            created = sum(1 for o in self.outcomes if o.status == 201)
            progress(f"[{self.clock}]   {answered}/{len(self.tickets)} answered, {created} created")
        return Outcome(outcome.status == 201, outcome.error)


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
    journeys = Journeys(tickets, clock)
    async with session(url, users, CLIENT_TIMEOUT_S) as client:
        try:
            async with asyncio.TaskGroup() as group:  # a failed restart stops the users at once
                restarting = group.create_task(restarter(journeys, restart, "SIGKILL" if crash_db else "SIGTERM"))
                crashing = group.create_task(crasher(journeys, crash_db, restarting)) if crash_db else None
                users_sending: list[Send] = [functools.partial(journeys.send_next, client)] * users
                group.create_task(closed_loop(users_sending, requests=len(tickets)))
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
    return journeys.outcomes, {**restarting.result(), **({"postgres": crashing.result()} if crashing else {})}


async def restarter(journeys: Journeys, restart: Callable[[], dict], signal_name: str) -> dict:
    """Once half the tickets have started: mark those in flight, then `restart()` the API, in a thread."""
    await journeys.restart_due.wait()
    in_flight = sorted(journeys.running)
    for number in in_flight:
        journeys.outcomes[number - 1].in_flight_at_restart = True
    progress(
        f"[{journeys.clock}]   {signal_name} to the API after ticket {journeys.restart_after} started, "
        f"{len(in_flight)} in flight"
    )
    info = await asyncio.to_thread(restart)
    progress(
        f"[{journeys.clock}]   the API stopped in {info['stop_s']:.1f} s, the new one listened "
        f"{info['start_s']:.1f} s later"
    )
    return {"after_ticket": journeys.restart_after, "in_flight": in_flight, **info}


async def crasher(journeys: Journeys, crash: Callable[[], dict], restarting: asyncio.Task) -> dict:
    """Once three quarters of the tickets have started, and the restart is over: `crash()` PostgreSQL, in a thread."""
    await journeys.crash_due.wait()
    await restarting  # one failure at a time
    in_flight = len(journeys.running)
    progress(
        f"[{journeys.clock}]   SIGKILL to PostgreSQL's postmaster after ticket {journeys.crash_after} started, "
        f"{in_flight} in flight"
    )
    info = await asyncio.to_thread(crash)
    progress(f"[{journeys.clock}]   PostgreSQL started again {info['down_s']:.1f} s after its crash")
    return {"after_ticket": journeys.crash_after, "in_flight": in_flight, **info}


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
