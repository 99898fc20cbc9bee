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
import shutil
import time
from pathlib import Path

import httpx

from scripts.toolkit import dataset
from scripts.toolkit.cli import command_parser, progress, run
from scripts.toolkit.commands.options import (
    Clock,
    add_json,
    add_out,
    add_speed,
    output_folder,
    positive_float,
    positive_int,
)
from scripts.toolkit.databases import create_lab_database, drop_database, postgres_server
from scripts.toolkit.running.apis import STOP_TIMEOUT_S
from scripts.toolkit.running.postgres import crash_postgres
from scripts.toolkit.running.stack import Stack, add_modes_argument, lab_postgres, running_stack
from scripts.toolkit.services import Service
from scripts.toolkit.soak.audit import check_rows, make_tickets, mode_figures
from scripts.toolkit.soak.faults import send_all
from ticket_api.instruments.connections import shown_dsn
from ticket_api.instruments.embedded import stop_embedded


def soak_mode(
    mode: str, args: argparse.Namespace, stack: Stack, simulator: Service, clock: Clock, pgdata: Path | None = None
) -> dict:
    """One INTAKE_MODE: a fresh database, the API, the tickets with a restart halfway, the check.

    With `pgdata` (--kill), the restart is a crash: the API and then the server in `pgdata` get SIGKILL.
    """
    tickets = make_tickets(args.tickets, f"{args.seed}-{mode}")
    httpx.post(f"{simulator.url}/admin/quota/reset", timeout=10).raise_for_status()  # a full quota per mode
    name = f"lab_soak_{os.getpid()}_{mode}"  # one per mode, so a kept one survives the next mode
    dsn = create_lab_database(stack.server, name, dataset.SIZES["small"])
    result = None
    try:
        env = {"DATABASE_URL": dsn, "PROVIDER_TIMEOUT_S": f"{args.provider_timeout:g}"}
        with stack.api(mode, env=env, simulator=simulator) as api:
            assert stack.log_dir is not None  # the soak's stack keeps its logs
            replacement = Service("api", api.argv, api.port, env=api.env, log_dir=stack.log_dir / f"{mode}-restarted")

            def restart() -> dict:
                stopping = time.perf_counter()
                exit_code = api.kill() if pgdata else api.stop()
                starting = time.perf_counter()
                replacement.start(ready="port")
                started_s = time.perf_counter() - starting
                return {"stop_s": starting - stopping, "start_s": started_s, "exit_code": exit_code}

            progress(f"[{clock}] {mode}: {args.tickets} tickets, {args.users} users, API at {api.url}")
            try:
                crash_db = (lambda: crash_postgres(pgdata)) if pgdata else None
                sent = send_all(api.url, tickets, args.users, restart, clock, crash_db)
                outcomes, restart_info = asyncio.run(sent)
            finally:
                replacement.stop(STOP_TIMEOUT_S)
        result = mode_figures(mode, outcomes, restart_info, check_rows(dsn, outcomes))
    finally:
        if result is not None and result["violations"]:
            progress(f"[{clock}] {mode}: kept the database for a look: {shown_dsn(dsn)}")
        else:
            drop_database(stack.server, name)
    return result


def render(result: dict, args: argparse.Namespace) -> str:
    """The figures of one mode as a few lines of text."""
    restart = result["restart"]
    answers = ", ".join(f"{answer} x {count}" for answer, count in result["answers"].items())
    errors = ", ".join(f"{name} x {count}" for name, count in result["connection_errors"].items()) or "none"
    unanswered, returned = result["saved_without_201"], result["committed_without_201"]
    shown = ", ".join(unanswered[:5]) + (", ..." if len(unanswered) > 5 else "")
    violations = "".join(f"\n    {line}" for line in result["violations"])
    crashed = "postgres" in restart  # --kill
    if crashed:
        stopped = "killed at once"
    elif restart["exit_code"] == -9:
        stopped = "killed after 35 s"
    else:
        stopped = f"drained and stopped in {restart['stop_s']:.1f} s"
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


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The command line's options, checked together."""
    parser = command_parser(
        "python -m scripts.soak",
        __doc__.splitlines()[0],
        "Exit codes: 0 nothing lost or duplicated, 1 a violation (its database "
        "is kept), 2 a start-up failed or bad arguments.",
    )
    parser.add_argument("--tickets", type=positive_int, default=500, help="tickets per mode (default 500)")
    parser.add_argument("--users", type=positive_int, default=64, help="tickets in flight at once (default 64)")
    add_modes_argument(parser, ["async"], also=("--mode",))
    add_speed(parser, 0.2)
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
    add_out(parser, "soak", "the logs")
    add_json(parser)
    args = parser.parse_args(argv)
    if not 0 <= args.error_rate + args.hang_rate <= 1 or min(args.error_rate, args.hang_rate, args.quota) < 0:
        parser.error("--error-rate and --hang-rate must be between 0 and 1 together, --quota at least 0")
    if args.hang_s <= args.provider_timeout:
        parser.error("--hang-s must be longer than --provider-timeout, or hangs are no timeouts")
    return args


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, soak each mode, print the figures; exit code 1 on any violation."""
    args = parse_arguments(argv)
    folder, clock = output_folder(args.out, "soak"), Clock()
    faults: tuple[str, ...] = ("--error-rate", f"{args.error_rate:g}", "--hang-rate", f"{args.hang_rate:g}")
    faults += ("--hang-s", f"{args.hang_s:g}", "--seed", str(args.seed))
    results = []
    pgdata = folder / "pgdata" if args.kill else None  # never the lab's server: this one gets SIGKILL
    postgres = functools.partial(postgres_server, pgdata=pgdata) if pgdata else lab_postgres
    try:
        # This process starts the embedded server, so it outlives the APIs that use it.
        with running_stack(args.speed, folder / "logs", postgres=postgres, load=False) as stack:
            progress(f"[{clock}] database server {shown_dsn(stack.server)}")
            simulator = stack.kept_simulator(quota=args.quota, faults=faults)
            for mode in args.modes:
                results.append(soak_mode(mode, args, stack, simulator, clock, pgdata))
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
