"""Many tickets through provider faults and one API restart, then PostgreSQL is checked: `python -m scripts.soak`.

It starts its own stack: the simulator with errors, hangs longer than the API's PROVIDER_TIMEOUT_S
and a small quota; per INTAKE_MODE a fresh database `lab_soak_<pid>_<mode>` on the lab's server,
and the API. Halfway through, the API gets SIGTERM (uvicorn finishes the requests in flight) and a
new one starts on the same port. With --kill it is a crash instead: SIGKILL to the API; then, once
three quarters of the tickets have started, SIGKILL to PostgreSQL's postmaster (an embedded server
of the run's own, never the lab's), started again after a pause while the API keeps running.
Every ticket carries a marker in its subject and the same marker as its Idempotency-Key; a
connection error, a timeout or a 503 db_unavailable is retried with that key, as a careful client would.
Afterwards every 201 must have exactly one complete row (ticket + AI results) with the id it
answered, no marker two rows, and no ticket a row without a 201 (except one in flight at the
restart or whose client gave up: those are listed). Tickets committed by an attempt whose 201
never reached the client, and returned by a retry, are counted apart: that is no violation.
"""

import argparse
import asyncio
import functools
import json
import os
import random
import re
import shutil
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from scripts.toolkit import dataset, lab
from scripts.toolkit.answers import error_code
from scripts.toolkit.cli import Clock, CommandError, output_folder, positive_float, positive_int, progress, run
from scripts.toolkit.databases import create_lab_database, drop_database
from scripts.toolkit.lab import STOP_TIMEOUT_S, started
from scripts.toolkit.load import Outcome, closed_loop
from scripts.toolkit.processes import Service
from scripts.toolkit.stack import parse_modes
from ticket_api.config import load_settings
from ticket_api.database import connect, resolve_dsn, shown_dsn
from ticket_api.embedded import embedded_dsn, stop_embedded

# Far above an answer of thread or async mode; a blocked event loop (INTAKE_MODE=blocking) with 64
# tickets queued and hangs among them can take longer: that ticket is retried with its key.
CLIENT_TIMEOUT_S = 120
RETRY_PAUSE_S = 0.2
RETRY_FOR_S = 60  # after a ticket's first connection error or timeout, how long it keeps trying
MARKER = re.compile(r"\[(soak-[0-9a-f]+-\d+)\]$")
DB_DOWN_S = 2.0  # --kill: how long PostgreSQL stays down


@dataclass
class Journey:
    """One ticket's journey: its final answer, and what happened on the way."""

    number: int
    marker: str
    status: int | None = None
    error: str | None = None
    ticket_id: int | None = None
    connection_errors: list[str] = field(default_factory=list)
    in_flight_at_restart: bool = False
    sent_at: float = 0.0  # wall-clock time the answered attempt was sent, to compare with the row's created_at


def make_tickets(count: int, seed: str) -> list[dict]:
    """Random tickets, each with a marker at the end of its subject and the marker as Idempotency-Key."""
    rng = random.Random(seed)
    run_id = f"{rng.getrandbits(32):08x}"
    tickets = []
    for number in range(1, count + 1):
        ticket, marker = dataset.random_ticket(rng), f"soak-{run_id}-{number}"
        tickets.append({**ticket, "subject": f"{ticket['subject']} [{marker}]", "key": marker})
    return tickets


async def send_all(
    url: str, tickets: list[dict], users: int, restart, clock: Clock, crash_db=None
) -> tuple[list[Journey], dict]:
    """Send the tickets, `users` at a time; when half have started, `restart()` runs in a thread, and when three
    quarters have, `crash_db()` (--kill) too."""
    outcomes = [Journey(number, ticket["key"]) for number, ticket in enumerate(tickets, start=1)]
    waiting = list(zip(tickets, outcomes, strict=False))
    running: set[int] = set()
    restart_after, crash_after = max(1, len(tickets) // 2), max(1, len(tickets) * 3 // 4)
    restart_due, crash_due = asyncio.Event(), asyncio.Event()
    step = max(1, len(tickets) // 10)

    async def send_next(client: httpx.AsyncClient) -> Outcome:
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

    async def crasher() -> dict:
        await crash_due.wait()
        await restarting  # one failure at a time
        in_flight = len(running)
        progress(
            f"[{clock}]   SIGKILL to PostgreSQL's postmaster after ticket {crash_after} started, {in_flight} in flight"
        )
        info = await asyncio.to_thread(crash_db)
        progress(f"[{clock}]   PostgreSQL started again {info['down_s']:.1f} s after its crash")
        return {"after_ticket": crash_after, "in_flight": in_flight, **info}

    limits = httpx.Limits(max_connections=users, max_keepalive_connections=users)
    async with httpx.AsyncClient(base_url=url, timeout=CLIENT_TIMEOUT_S, limits=limits) as client:
        try:
            async with asyncio.TaskGroup() as group:  # a failed restart stops the users at once
                restarting = group.create_task(restarter())
                crashing = group.create_task(crasher()) if crash_db else None
                group.create_task(closed_loop([functools.partial(send_next, client)] * users, requests=len(tickets)))
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None
    return outcomes, {**restarting.result(), **({"postgres": crashing.result()} if crashing else {})}


async def send_one(client: httpx.AsyncClient, ticket: dict, outcome: Journey) -> None:
    """POST the ticket; a connection error, timeout or 503 db_unavailable is retried with the same Idempotency-Key
    for RETRY_FOR_S."""
    body = {name: value for name, value in ticket.items() if name != "key"}
    give_up_at = None
    while True:
        outcome.sent_at = time.time()
        try:
            response = await client.post("/v1/tickets", json=body, headers={"Idempotency-Key": ticket["key"]})
            # The database was lost, perhaps right after the commit: only a retry can tell.
            failure = "db_unavailable" if error_code(response) == "db_unavailable" else None
        except httpx.TransportError as exc:  # timeouts included
            response, failure = None, type(exc).__name__
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


def check_rows(dsn: str, outcomes: list[Journey]) -> dict:
    """Compare the answers with the rows in PostgreSQL: the counts, and every violation as one line."""
    with connect(dsn) as conn:
        rows = conn.execute(
            """SELECT t.id, t.subject, r.ticket_id IS NOT NULL, extract(epoch FROM t.created_at)::float8 FROM tickets t
               LEFT JOIN ticket_ai_results r ON r.ticket_id = t.id ORDER BY t.id"""
        ).fetchall()
    saved: dict[str, list[int]] = {}
    created_at = {ticket_id: created for ticket_id, _, _, created in rows}
    violations = [f"ticket {ticket_id} has no AI results" for ticket_id, _, complete, _ in rows if not complete]
    for ticket_id, subject, _, _ in rows:
        marker = MARKER.search(subject)
        if marker is None:
            violations.append(f"ticket {ticket_id} has no soak marker: {subject!r}")
        else:
            saved.setdefault(marker.group(1), []).append(ticket_id)
    for marker in sorted(set(saved) - {outcome.marker for outcome in outcomes}):
        violations.append(f"{marker}: tickets {saved[marker]} of a ticket never sent")
    saved_unanswered, returned_on_retry = [], []
    for outcome in outcomes:
        ids = saved.get(outcome.marker, [])
        if len(ids) > 1:
            violations.append(f"{outcome.marker}: saved {len(ids)} times, ids {ids}")
        if outcome.status == 201 and ids != [outcome.ticket_id]:
            saved_as = ids or "nothing"
            violations.append(f"{outcome.marker}: answered 201 with id {outcome.ticket_id}, saved as {saved_as}")
        elif outcome.status == 201 and created_at[ids[0]] < outcome.sent_at:
            returned_on_retry.append(outcome.marker)  # committed before the attempt that got the 201 was sent
        elif outcome.status != 201 and ids:
            if outcome.in_flight_at_restart or outcome.connection_errors:
                saved_unanswered.append(outcome.marker)
            else:
                violations.append(f"{outcome.marker}: answered {outcome.status} {outcome.error}, yet saved as {ids}")
    return {
        "rows": len(rows),
        "complete_rows": sum(1 for row in rows if row[2]),
        "duplicates": sum(len(ids) - 1 for ids in saved.values()),
        "committed_without_201": returned_on_retry,
        "saved_without_201": saved_unanswered,
        "violations": violations,
    }


def soak_mode(
    mode: str,
    args: argparse.Namespace,
    server_dsn: str,
    simulator: Service,
    log_dir: Path,
    clock: Clock,
    pgdata: Path | None = None,
) -> dict:
    """One INTAKE_MODE: a fresh database, the API, the tickets with a restart halfway, the check.

    With `pgdata` (--kill), the restart is a crash: the API and then the server in `pgdata` get SIGKILL.
    """
    tickets = make_tickets(args.tickets, f"{args.seed}-{mode}")
    httpx.post(f"{simulator.url}/admin/quota/reset", timeout=10).raise_for_status()  # a full quota per mode
    name = f"lab_soak_{os.getpid()}_{mode}"  # one per mode, so a kept one survives the next mode
    dsn = create_lab_database(server_dsn, name, dataset.SIZES["small"])
    result = None
    try:
        env = {"INTAKE_MODE": mode, "DATABASE_URL": dsn, "PROVIDER_TIMEOUT_S": f"{args.provider_timeout:g}"}
        api = lab.api(f"{simulator.url}/v1", env=env, log_dir=log_dir / mode)
        replacement = Service("api", api.argv, api.port, env=api.env, log_dir=log_dir / f"{mode}-restarted")

        def restart() -> dict:
            stopping = time.perf_counter()
            exit_code = kill(api) if pgdata else api.stop()
            starting = time.perf_counter()
            replacement.start(ready="port")
            return {"stop_s": starting - stopping, "start_s": time.perf_counter() - starting, "exit_code": exit_code}

        with started(api):
            progress(f"[{clock}] {mode}: {args.tickets} tickets, {args.users} users, API at {api.url}")
            try:
                crash_db = (lambda: crash_postgres(pgdata)) if pgdata else None
                outcomes, restart_info = asyncio.run(send_all(api.url, tickets, args.users, restart, clock, crash_db))
            finally:
                replacement.stop(STOP_TIMEOUT_S)
        result = summarize(mode, outcomes, restart_info, check_rows(dsn, outcomes))
    finally:
        if result is not None and result["violations"]:
            progress(f"[{clock}] {mode}: kept the database for a look: {shown_dsn(dsn)}")
        else:
            drop_database(server_dsn, name)
    return result


def kill(service: Service) -> int:
    """SIGKILL to a process we started and its children (uvicorn's workers): a crash, nothing runs on; its exit code."""
    if os.name == "nt":
        service.process.kill()
    else:
        os.killpg(service.process.pid, signal.SIGKILL)
    return service.process.wait()


def kill_postgres(pgdata: Path) -> None:
    """SIGKILL to the postmaster of the embedded server in `pgdata`; returns once its backends have exited too."""
    postmaster = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
    backends = postmaster.children()
    postmaster.kill()
    # Each backend notices its postmaster's death and exits; a new server cannot start while one holds the memory.
    _, alive = psutil.wait_procs([postmaster, *backends], timeout=30)
    if alive:
        raise CommandError(f"PostgreSQL processes {[process.pid for process in alive]} outlived their postmaster")


def crash_postgres(pgdata: Path) -> dict:
    """SIGKILL to the postmaster of the server in `pgdata`, started again (crash recovery) DB_DOWN_S later."""
    killed = time.perf_counter()
    kill_postgres(pgdata)
    time.sleep(DB_DOWN_S)
    embedded_dsn(pgdata)
    return {"down_s": time.perf_counter() - killed}


def summarize(mode: str, outcomes: list[Journey], restart_info: dict, checked: dict) -> dict:
    """Every figure of one mode's run, as printed by --json."""
    answers = Counter(str(o.status) if o.status == 201 else f"{o.status or 'no answer'} {o.error}" for o in outcomes)
    connection_errors = Counter(name for o in outcomes for name in o.connection_errors)
    return {
        "mode": mode,
        "sent": len(outcomes),
        "created": answers.get("201", 0),
        "answers": dict(sorted(answers.items())),
        "connection_errors": dict(connection_errors),
        "tickets_retried": sum(1 for o in outcomes if o.connection_errors),
        "restart": restart_info,
        **checked,
    }


def render(result: dict, args: argparse.Namespace) -> str:
    """The figures of one mode as a few lines of text."""
    restart = result["restart"]
    answers = ", ".join(f"{answer} x {count}" for answer, count in result["answers"].items())
    errors = ", ".join(f"{name} x {count}" for name, count in result["connection_errors"].items()) or "none"
    unanswered, returned = result["saved_without_201"], result["committed_without_201"]
    shown = ", ".join(unanswered[:5]) + (", ..." if len(unanswered) > 5 else "")
    violations = "".join(f"\n    {line}" for line in result["violations"])
    crashed = "postgres" in restart  # --kill
    stopped = (
        "killed at once"
        if crashed
        else "killed after 35 s"
        if restart["exit_code"] == -9
        else f"drained and stopped in {restart['stop_s']:.1f} s"
    )
    return (
        f"INTAKE_MODE={result['mode']}: {result['sent']} tickets sent by {args.users} users; simulator speed "
        f"{args.speed:g}, error rate {args.error_rate:g}, hang rate {args.hang_rate:g} ({args.hang_s:g} s, "
        f"PROVIDER_TIMEOUT_S={args.provider_timeout:g}), quota {args.quota}/min\n"
        f"  answers: {answers}\n"
        f"  restart: {'SIGKILL' if crashed else 'SIGTERM'} once ticket {restart['after_ticket']} had started, "
        f"{len(restart['in_flight'])} in flight; {stopped}, a new API listened {restart['start_s']:.1f} s later\n"
        + (
            f"  PostgreSQL crash: SIGKILL to the postmaster once ticket {restart['postgres']['after_ticket']} had "
            f"started, {restart['postgres']['in_flight']} in flight; started again (crash recovery) "
            f"{restart['postgres']['down_s']:.1f} s later, the API kept running\n"
            if crashed
            else ""
        )
        + f"  connection errors, timeouts and 503 db_unavailable: {errors} (failed attempts of "
        f"{result['tickets_retried']} tickets, each retried with its Idempotency-Key)\n"
        f"  PostgreSQL: {result['rows']} tickets, {result['complete_rows']} with their AI results, "
        f"{result['duplicates']} duplicates; saved without a 201 (in flight at the restart, or its client gave up): "
        f"{len(unanswered)}{f' ({shown})' if unanswered else ''}\n"
        f"  committed without a 201 reaching the client, returned by a retry with its key: {len(returned)}\n"
        f"  violations: {len(result['violations']) or 'none'}{violations}"
    )


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, soak each mode, print the figures; exit code 1 on any violation."""
    parser = argparse.ArgumentParser(
        prog="python -m scripts.soak",
        description=__doc__.splitlines()[0],
        epilog="Exit codes: 0 nothing lost or duplicated, 1 a violation (its database "
        "is kept), 2 a start-up failed or bad arguments.",
    )
    parser.add_argument("--tickets", type=positive_int, default=500, help="tickets per mode (default 500)")
    parser.add_argument("--users", type=positive_int, default=64, help="tickets in flight at once (default 64)")
    parser.add_argument(
        "--modes",
        "--mode",
        type=parse_modes,
        default=["async"],
        help="INTAKE_MODE values, separated by commas (default async)",
    )
    parser.add_argument("--speed", type=positive_float, default=0.2, help="the simulator's speed (default 0.2)")
    parser.add_argument(
        "--error-rate", type=float, default=0.05, help="share of provider calls answered 500/503 (default 0.05)"
    )
    parser.add_argument(
        "--hang-rate", type=float, default=0.02, help="share of provider calls that hang (default 0.02)"
    )
    parser.add_argument("--hang-s", type=positive_float, default=5.0, help="how long a hang lasts (default 5)")
    parser.add_argument(
        "--provider-timeout",
        type=positive_float,
        default=2.0,
        help="the API's PROVIDER_TIMEOUT_S, shorter than a hang (default 2)",
    )
    parser.add_argument(
        "--quota",
        type=int,
        default=800,
        help="chat calls per minute (2 per ticket; default 800, so some tickets get 429)",
    )
    parser.add_argument(
        "--kill",
        action="store_true",
        help="crash instead of SIGTERM: SIGKILL to the API, then to PostgreSQL's postmaster "
        "(an embedded server of the run's own, in the output folder), started again",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed for the tickets and the faults (default 1)")
    parser.add_argument("--out", help="folder for the logs (default .lab/soak-DATE-TIME)")
    parser.add_argument("--json", action="store_true", help="print every figure as one JSON object")
    args = parser.parse_args(argv)
    if not 0 <= args.error_rate + args.hang_rate <= 1 or min(args.error_rate, args.hang_rate, args.quota) < 0:
        parser.error("--error-rate and --hang-rate must be between 0 and 1 together, --quota at least 0")
    if args.hang_s <= args.provider_timeout:
        parser.error("--hang-s must be longer than --provider-timeout, or hangs are no timeouts")

    folder, clock = output_folder(args.out, "soak"), Clock()
    faults = [
        "--error-rate",
        f"{args.error_rate:g}",
        "--hang-rate",
        f"{args.hang_rate:g}",
        "--hang-s",
        f"{args.hang_s:g}",
        "--seed",
        str(args.seed),
    ]
    results = []
    pgdata = folder / "pgdata" if args.kill else None  # never the lab's server: this one gets SIGKILL
    # This process starts the embedded server, so it outlives the APIs that use it.
    server_dsn = embedded_dsn(pgdata) if pgdata else resolve_dsn(load_settings())
    progress(f"[{clock}] database server {shown_dsn(server_dsn)}")
    try:
        simulator = lab.simulator(speed=args.speed, quota=args.quota, extra=faults, log_dir=folder / "logs")
        with started(simulator):
            for mode in args.modes:
                results.append(soak_mode(mode, args, server_dsn, simulator, folder / "logs", clock, pgdata))
    finally:
        if pgdata:
            stop_embedded(pgdata)
            if len(results) == len(args.modes) and not any(result["violations"] for result in results):
                shutil.rmtree(pgdata, ignore_errors=True)
            else:
                progress(f"[{clock}] kept the run's PostgreSQL data for a look: {pgdata}")
    if args.json:
        print(json.dumps({"runs": results, "violations": sum(len(r["violations"]) for r in results)}))
    else:
        print("\n".join(render(result, args) for result in results))
    progress(f"[{clock}] logs in {folder}")
    return 1 if any(result["violations"] for result in results) else 0


if __name__ == "__main__":
    run(main)
