"""Send 8 tickets, 4 at a time, while GET /health is asked every 0.1 s: `python -m scripts.stall`.

/health does no work, so it should answer in milliseconds. If it needs seconds, something holds
the API's event loop: a waiting call without `await` (INTAKE_MODE=blocking). On the lab's machine:

  async (the default)   8 tickets, 4 at a time: 6.0 s, status codes [201]
                        GET /health during that time: 59 answers, median 2.5 ms, slowest 4.3 ms
  INTAKE_MODE=blocking  8 tickets, 4 at a time: 19.4 s, status codes [201]
                        GET /health during that time: 3 answers, median 9381.3 ms, slowest 9765.9 ms

The tickets go in groups: a group's tickets arrive together (headers first, bodies at once), and
the next group goes once the whole group has answered. The first GET /health leaves at the start,
with the first group; each next one 0.1 s after the previous answer. A probe still waiting when the
last ticket is answered is waited for and counts: that wait is the stall. Every time is in seconds
from the start. `--passes 5` runs it five times and adds the median of each figure, as the course
reports its runs.

Against an API on several worker processes (`fastapi run --host 127.0.0.1 --workers 2`), each ticket and each probe
goes to the worker that accepted its connection: /health sees that worker's event loop only, and
can answer at once while another worker's tickets wait.
"""

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

import httpx

from scripts.toolkit.answers import Answer, error_code
from scripts.toolkit.cli import CommandError, command_parser, progress, run
from scripts.toolkit.dataset import random_ticket
from ticket_api.config import load_settings

DEFAULT_URL = "http://127.0.0.1:8000"
TIMEOUT_S = 120  # a ticket of a stalled server may wait for many others; it must not time out first
FIGURES = ("total_s", "health_answers", "health_median_ms", "health_slowest_ms", "health_waited_share")


async def measure_stall(
    url: str, tickets: int = 8, concurrency: int = 4, interval_s: float = 0.1, seed: int | None = None
) -> dict:
    """Send the tickets, `concurrency` at a time, and probe /health meanwhile; every time is from the start."""
    rng = random.Random(seed)
    waiting = [(number, random_ticket(rng)) for number in range(1, tickets + 1)]
    async with (
        httpx.AsyncClient(base_url=url, timeout=TIMEOUT_S) as client,
        httpx.AsyncClient(base_url=url, timeout=TIMEOUT_S) as probe_client,
    ):
        await check_api(probe_client)
        # Open one connection per ticket in flight before the clock starts: the figures are the
        # server's, and the first tickets reach it together instead of one connection set-up apart.
        await asyncio.gather(*(client.get("/health") for _ in range(concurrency)))
        since, done = time.perf_counter(), asyncio.Event()
        prober = asyncio.create_task(probe_health(probe_client, interval_s, done, since))
        sent = []
        while waiting:  # `concurrency` tickets together; the next ones once all of these have answered
            group, waiting = waiting[:concurrency], waiting[concurrency:]
            together = asyncio.Barrier(len(group))
            sent += await asyncio.gather(
                *(send_ticket(client, number, ticket, since, together) for number, ticket in group)
            )
        total_s = time.perf_counter() - since
        done.set()
        probes = await prober
    return stall_figures(url, tickets, concurrency, interval_s, seed, total_s, sent, probes)


async def send_ticket(
    client: httpx.AsyncClient, number: int, ticket: dict, since: float, together: asyncio.Barrier
) -> dict:
    """Send one ticket, its body at the same moment as the others of its group; its times (s) and outcome."""
    body = json.dumps(ticket).encode()

    async def body_with_the_others():
        # This client needs about a millisecond to send a request, the API about as long to start on
        # one: sent one by one, a group's last tickets could arrive after its first had begun. So all
        # headers go first and the bodies together, as the tickets of four users would arrive.
        with contextlib.suppress(asyncio.BrokenBarrierError):
            await together.wait()
        yield body

    start_s = time.perf_counter() - since
    try:
        response = await client.post(
            "/v1/tickets",
            content=body_with_the_others(),
            headers={"Content-Type": "application/json", "Content-Length": str(len(body))},
        )
        end_s = time.perf_counter() - since
        status, error, timing = response.status_code, error_code(response), server_timing(response)
        calls = provider_calls_on_our_clock(response, end_s)
    except httpx.HTTPError as exc:
        await together.abort()  # the others send their bodies without waiting for this one
        end_s = time.perf_counter() - since
        status, error, timing, calls = None, type(exc).__name__, {}, []
    return {
        "ticket": number,
        "customer_id": ticket["customer_id"],
        "start_s": start_s,
        "end_s": end_s,
        "status": status,
        "error": error,
        "ai_ms": timing.get("ai"),
        "provider_calls": calls,
    }


def provider_calls_on_our_clock(response: httpx.Response, end_s: float) -> list[list[float]]:
    """The API's provider calls for this answer (X-Provider-Calls) as [start, end] seconds on our clock.

    The API counts from when it started on the request. Its answer left as its Server-Timing
    `total` ended, a moment before we had it at `end_s`: so it started `total` before `end_s`.
    (Not at our start: a blocked event loop reads a request late.)
    """
    total_ms = server_timing(response).get("total")
    if total_ms is None:
        return []
    started_s = end_s - total_ms / 1000
    return [[started_s + start_ms / 1000, started_s + end_ms / 1000] for start_ms, end_ms in provider_calls(response)]


def stall_figures(
    url: str,
    tickets: int,
    concurrency: int,
    interval_s: float,
    seed: int | None,
    total_s: float,
    sent: list[dict],
    probes: list[dict],
) -> dict:
    """Every figure of one run, as printed by --json."""
    health_ms = times_ms(probes)
    return {
        "url": url,
        "tickets": tickets,
        "concurrency": concurrency,
        "interval_s": interval_s,
        "seed": seed,
        "total_s": total_s,
        "statuses": sorted({t["status"] for t in sent if t["status"] is not None}),
        "errors": sorted({t["error"] for t in sent if t["error"]}),
        "health_answers": len(health_ms),
        "health_median_ms": statistics.median(health_ms) if health_ms else None,
        "health_slowest_ms": max(health_ms) if health_ms else None,
        "health_waited_share": waited_share(probes, total_s),
        "ticket_runs": sorted(sent, key=lambda t: t["ticket"]),
        "probes": probes,
    }


def waited_share(probes: list[dict], total_s: float) -> float:
    """The share of a run of `total_s` during which a GET /health was waiting for its answer (one at a time).

    Where slow thread-pool trips (a busy machine) let some probes answer in the gaps of a blocked
    loop, and the median with them, the time the probes waited in all still says how long it held them.
    """
    waited_s = sum(max(0.0, min(probe["ms"] / 1000, total_s - probe["start_s"])) for probe in probes)
    return waited_s / total_s if total_s > 0 else 0.0


def median_pass(results: list[dict]) -> dict:
    """The median of each figure over several passes, as the course reports its runs (a figure without any: None)."""
    statuses = sorted({status for result in results for status in result["statuses"]})
    tickets = [ticket for result in results for ticket in result["ticket_runs"]]
    return {**results[0], "statuses": statuses, "ticket_runs": tickets, **medians(results, FIGURES)}


def render(result: dict) -> str:
    """The two lines of the course."""
    statuses = str(result["statuses"])
    unanswered = sum(1 for t in result["ticket_runs"] if t["status"] is None)
    if unanswered:
        statuses += f", {unanswered} without an answer"
    health = f"{result['health_answers']:g} answers"
    if result["health_answers"]:
        health += f", median {result['health_median_ms']:.1f} ms, slowest {result['health_slowest_ms']:.1f} ms"
    return (
        f"{result['tickets']} tickets, {result['concurrency']} at a time: {result['total_s']:.1f} s, "
        f"status codes {statuses}\nGET /health during that time: {health}"
    )


def quota_advice() -> str:
    """What to do when the simulated provider's quota is spent."""
    admin_url = load_settings().provider_url.removesuffix("/v1") + "/admin/quota"
    return (
        "some tickets got 503 ai_busy: the simulated provider's quota (100 chat requests per minute) is spent.\n"
        "Wait a minute and run it again, or switch the quota off: restart the simulator with "
        "`python -m simulator --quota 0`,\nor, while it runs: "
        f"curl -X PUT {admin_url} -d '{{\"requests_per_minute\": 0}}'"
    )


# What scripts.burst and the lab's tools take from here: argparse types, medians over runs, polling while a run goes
# on, the /health prober, and the API's answers read (Server-Timing, X-Provider-Calls, an error in a few words).


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a number > 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number > 0")
    return value


def medians(runs: list[dict], figures: Iterable[str]) -> dict[str, float | None]:
    """The median of each figure over the runs (passes, samples) that have it; None where none has."""
    found = {figure: [run[figure] for run in runs if run[figure] is not None] for figure in figures}
    return {figure: statistics.median(values) if values else None for figure, values in found.items()}


async def every(
    interval_s: float, stop: asyncio.Event, action: Callable[[], Awaitable[bool | None]], paced: bool = False
) -> None:
    """Run `action` at once, then `interval_s` after each run ended (`paced`: after each run started), until `stop` is
    set or the action returns True (it has what it wanted); a run under way when `stop` is set is waited for."""
    while not stop.is_set():
        started = time.perf_counter()
        if await action():
            return
        wait_s = interval_s - (time.perf_counter() - started) if paced else interval_s
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, wait_s))


@dataclass
class HealthProbes:
    """What probe_health has seen so far, readable while it runs (the watch page reads it live)."""

    since: float  # time.perf_counter() that start_s counts from
    answers: list[dict] = field(default_factory=list)  # {"start_s": ..., "ms": ...}, one per 2xx
    errors: list[str] = field(default_factory=list)
    sent_at: float | None = None  # perf_counter() of the GET waiting for its answer, if one is
    refused: bool = False  # the last GET got no answer at all: the API is down


async def probe_health(
    client: httpx.AsyncClient,
    interval_s: float,
    stop: asyncio.Event,
    since: float | None = None,
    seen: HealthProbes | None = None,
) -> list[dict]:
    """GET /health at once, then `interval_s` after each answer, until `stop` is set; each answer's start (s since
    `since`) and ms.

    A probe still on its way when `stop` is set is waited for and counts: its wait is part of what
    was measured. A probe that fails is not a sample; its reason goes to the errors of `seen` when
    given. Use a client of its own, so that a probe never waits for a connection of the load's pool.
    """
    probes = seen or HealthProbes(time.perf_counter() if since is None else since)

    async def probe() -> None:
        probes.sent_at = sent = time.perf_counter()
        try:
            response = await client.get("/health")
        except httpx.HTTPError as exc:
            probes.errors.append(describe_failure(exc))
            probes.refused = True
        else:
            probes.refused = False
            if response.is_success:
                probes.answers.append({"start_s": sent - probes.since, "ms": (time.perf_counter() - sent) * 1000})
            else:
                probes.errors.append(describe_failure(response))
        finally:
            probes.sent_at = None

    await every(interval_s, stop, probe)
    return probes.answers


def times_ms(probes: list[dict]) -> list[float]:
    """The probes' times in milliseconds."""
    return [probe["ms"] for probe in probes]


async def check_api(client: httpx.AsyncClient) -> None:
    """CommandError (exit code 2) unless the API at the client's base URL answers GET /health."""
    try:
        response = await client.get("/health", timeout=5)
    except httpx.HTTPError as exc:
        raise CommandError(
            f"cannot reach the API at {client.base_url} ({type(exc).__name__}): start it (fastapi dev) or pass --url"
        ) from None
    if not response.is_success:
        raise CommandError(f"GET {client.base_url}health answered {response.status_code}: is this the ticket API?")


def server_timing(answer: Answer | str) -> dict[str, float]:
    """The API's Server-Timing (`db;dur=9.5, ai;dur=2130.2, ...`) as {"db": 9.5, "ai": 2130.2, ...}."""
    value = answer if isinstance(answer, str) else answer.headers.get("server-timing", "")
    parts = (part.strip().partition(";dur=") for part in value.split(","))
    return {name: float(duration) for name, _, duration in parts if duration}


def provider_calls(answer: Answer | str) -> list[tuple[float, float]]:
    """The API's X-Provider-Calls (`3.1-913.5, 915.0-2016.2`) as [(3.1, 913.5), (915.0, 2016.2)], in ms."""
    value = answer if isinstance(answer, str) else answer.headers.get("x-provider-calls", "")
    spans = (span.partition("-") for span in value.split(",") if span.strip())
    return [(float(start), float(end)) for start, _, end in spans]


def describe_failure(failure: Answer | Exception) -> str:
    """A short reason: `503 ai_busy` for an error answer, the exception's name for a transport error."""
    if isinstance(failure, Exception):
        return type(failure).__name__
    code = error_code(failure) or ""
    return f"{failure.status_code} {code.removeprefix(f'http_{failure.status_code}')}".strip()


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, measure, print; exit code 1 if a ticket was not created."""
    parser = command_parser(
        "python -m scripts.stall",
        __doc__,
        "Exit codes: 0 every ticket answered 201, 1 some did not, 2 the API cannot be reached or bad arguments.",
    )
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the API's address (default {DEFAULT_URL})")
    parser.add_argument("--tickets", type=positive_int, default=8, help="tickets in all (default 8)")
    parser.add_argument("--concurrency", type=positive_int, default=4, help="tickets in flight at once (default 4)")
    parser.add_argument(
        "--interval",
        type=positive_float,
        default=0.1,
        help="seconds between an answer of /health and the next probe (default 0.1)",
    )
    parser.add_argument("--seed", type=int, help="seed for the customers and texts (default: random)")
    parser.add_argument(
        "--passes", type=positive_int, default=1, help="runs, each printed, then each figure's median (default 1)"
    )
    parser.add_argument("--json", action="store_true", help="print every figure as one JSON object")
    args = parser.parse_args(argv)

    results = []
    for number in range(1, args.passes + 1):
        seed = None if args.seed is None else args.seed + number - 1
        of = f"pass {number}/{args.passes}: " if args.passes > 1 else ""
        progress(f"{of}sending {args.tickets} tickets to {args.url}, {args.concurrency} at a time ...")
        results.append(asyncio.run(measure_stall(args.url, args.tickets, args.concurrency, args.interval, seed)))
        if args.passes > 1 and not args.json:
            print(f"pass {number} of {args.passes}\n{render(results[-1])}", flush=True)
    if args.passes == 1:
        print(json.dumps(results[0]) if args.json else render(results[0]))
    elif args.json:
        print(json.dumps({"passes": results, "median": median_pass(results)}))
    else:
        print(f"median of {args.passes} passes, each figure on its own\n{render(median_pass(results))}")
    if any("ai_busy" in result["errors"] for result in results):
        print(quota_advice(), file=sys.stderr)
    return 0 if all(ticket["status"] == 201 for result in results for ticket in result["ticket_runs"]) else 1


if __name__ == "__main__":
    run(main)
