"""Send 8 tickets, 4 at a time, while GET /health is asked every 0.1 s: `python -m scripts.stall`.

/health does no work, so it should answer in milliseconds. If it needs seconds, something holds
the API's event loop: a waiting call without `await` (INTAKE_MODE=blocking).
"""

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import sys
import time

import httpx

from scripts.cli import CommandError, positive_float, positive_int, progress, run
from scripts.dataset import random_ticket
from scripts.measure import check_api, error_code, provider_calls, server_timing
from ticket_api.config import load_settings

DEFAULT_URL = "http://127.0.0.1:8000"
TIMEOUT_S = 120  # a ticket of a stalled server may wait for many others; it must not time out first


async def measure_stall(url: str, tickets: int = 8, concurrency: int = 4, interval_s: float = 0.1,
                        seed: int | None = None) -> dict:
    """Send the tickets, `concurrency` at a time, and probe /health meanwhile; every time is from the start."""
    rng = random.Random(seed)
    waiting = [(number, random_ticket(rng)) for number in range(1, tickets + 1)]
    async with httpx.AsyncClient(base_url=url, timeout=TIMEOUT_S) as client, \
            httpx.AsyncClient(base_url=url, timeout=TIMEOUT_S) as probe_client:
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
            sent += await asyncio.gather(*(send_ticket(client, number, ticket, since, together)
                                           for number, ticket in group))
        total_s = time.perf_counter() - since
        done.set()
        probes = await prober
    return summarize(url, tickets, concurrency, interval_s, seed, total_s, sent, probes)


async def send_ticket(client: httpx.AsyncClient, number: int, ticket: dict, since: float,
                      together: asyncio.Barrier) -> dict:
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
        response = await client.post("/v1/tickets", content=body_with_the_others(),
                                     headers={"Content-Type": "application/json", "Content-Length": str(len(body))})
        end_s = time.perf_counter() - since
        status, error, timing = response.status_code, error_code(response), server_timing(response)
        calls = provider_calls_on_our_clock(response, end_s)
    except httpx.HTTPError as exc:
        await together.abort()  # the others send their bodies without waiting for this one
        end_s = time.perf_counter() - since
        status, error, timing, calls = None, type(exc).__name__, {}, []
    return {"ticket": number, "customer_id": ticket["customer_id"], "start_s": start_s, "end_s": end_s,
            "status": status, "error": error, "ai_ms": timing.get("ai"), "provider_calls": calls}


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


async def probe_health(client: httpx.AsyncClient, interval_s: float, done: asyncio.Event, since: float) -> list[dict]:
    """GET /health `interval_s` after each answer until `done`; each answer's start (s) and time (ms)."""
    probes = []
    while True:
        try:
            await asyncio.wait_for(done.wait(), interval_s)
            return probes
        except TimeoutError:
            pass
        start_s = time.perf_counter() - since
        try:
            response = await client.get("/health")
        except httpx.HTTPError:
            continue  # no answer is no sample; the tickets' figures tell the rest
        if response.is_success:
            probes.append({"start_s": start_s, "ms": (time.perf_counter() - since - start_s) * 1000})


def summarize(url: str, tickets: int, concurrency: int, interval_s: float, seed: int | None, total_s: float,
              sent: list[dict], probes: list[dict]) -> dict:
    """Every figure of one run, as printed by --json."""
    health_ms = [probe["ms"] for probe in probes]
    return {
        "url": url, "tickets": tickets, "concurrency": concurrency, "interval_s": interval_s, "seed": seed,
        "total_s": total_s,
        "statuses": sorted({t["status"] for t in sent if t["status"] is not None}),
        "errors": sorted({t["error"] for t in sent if t["error"]}),
        "health_answers": len(health_ms),
        "health_median_ms": statistics.median(health_ms) if health_ms else None,
        "health_slowest_ms": max(health_ms) if health_ms else None,
        "ticket_runs": sorted(sent, key=lambda t: t["ticket"]),
        "probes": probes,
    }


def report(result: dict) -> str:
    """The two lines of the course."""
    statuses = str(result["statuses"])
    unanswered = sum(1 for t in result["ticket_runs"] if t["status"] is None)
    if unanswered:
        statuses += f", {unanswered} without an answer"
    health = f"{result['health_answers']} answers"
    if result["health_answers"]:
        health += f", median {result['health_median_ms']:.1f} ms, slowest {result['health_slowest_ms']:.1f} ms"
    return (f"{result['tickets']} tickets, {result['concurrency']} at a time: {result['total_s']:.1f} s, "
            f"status codes {statuses}\nGET /health during that time: {health}")


def quota_advice() -> str:
    """What to do when the simulated provider's quota is spent."""
    admin_url = load_settings().provider_url.removesuffix("/v1") + "/admin/quota"
    return ("some tickets got 503 ai_busy: the simulated provider's quota (100 chat requests per minute) is spent.\n"
            "Wait a minute and run it again, or switch the quota off: restart the simulator with "
            "`python -m simulator --quota 0`,\nor, while it runs: "
            f"curl -X PUT {admin_url} -d '{{\"requests_per_minute\": 0}}'")


CALLS = (("classify", "#08519c"), ("draft", "#3182bd"), ("embed", "#9ecae1"))  # do_ai_work's calls, in order
WAITING_COLOR, HEALTH_COLOR, UNKNOWN_COLOR = "0.45", "tab:orange", "0.8"


def draw_timeline(result: dict, path: str, title: str | None = None) -> None:
    """Draw the run to scale: per ticket its provider calls and its waits for the server, per /health probe its wait."""
    plt = load_pyplot()
    runs = result["ticket_runs"]
    figure, axes = plt.subplots(figsize=(12, 2.4 + 0.5 * len(runs)), layout="constrained")
    for row, ticket in enumerate(runs, start=1):
        draw_ticket(axes, row, ticket)
    for probe in result["probes"]:
        axes.plot([probe["start_s"], probe["start_s"] + probe["ms"] / 1000], [0, 0], color=HEALTH_COLOR, lw=6,
                  solid_capstyle="butt", marker="|", markersize=16, markeredgewidth=2)
    axes.set_yticks(range(len(runs) + 1), ["GET /health"] + [f"ticket {t['ticket']}" for t in runs])
    axes.invert_yaxis()
    axes.set_xlim(0, max(result["total_s"], *(p["start_s"] + p["ms"] / 1000 for p in result["probes"])) * 1.17)
    axes.tick_params(labelsize=12)
    axes.grid(axis="x", alpha=0.3)
    axes.set_xlabel("seconds since the first ticket was sent", fontsize=12)
    axes.set_title(title or f"{result['tickets']} tickets, {result['concurrency']} at a time, "
                   f"and GET /health every {result['interval_s']:g} s", fontsize=14)
    without_calls = any(not ticket["provider_calls"] for ticket in runs)
    handles = legend_handles(without_calls)
    figure.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=11, frameon=False,
                  handlelength=2.5, columnspacing=1.5)
    figure.savefig(path, dpi=150)
    plt.close(figure)


def draw_ticket(axes, row: int, ticket: dict) -> None:
    """One ticket: hatched from sent to answered, its provider calls solid on top, its outcome after it."""
    number, calls = ticket["ticket"], ticket["provider_calls"]
    whole = {"left": ticket["start_s"], "height": 0.6, "gid": f"ticket-{number}"}
    if calls:
        axes.barh(row, ticket["end_s"] - ticket["start_s"], facecolor="white", edgecolor=WAITING_COLOR, hatch="///",
                  **whole)
    else:  # the answer did not say when the provider worked: no answer, no AI work, or a provider without HTTP
        axes.barh(row, ticket["end_s"] - ticket["start_s"], color=UNKNOWN_COLOR, **whole)
    for index, (start_s, end_s) in enumerate(calls):
        axes.barh(row, end_s - start_s, left=start_s, height=0.6, color=CALLS[index % len(CALLS)][1],
                  edgecolor="white", linewidth=0.8, gid=f"ticket-{number}-call-{index + 1}")
    ok = ticket["status"] == 201
    outcome = "201" if ok else f"{ticket['status'] or ''} {ticket['error']}".strip()
    provider = f", provider {ticket['ai_ms'] / 1000:.1f} s" if ticket["ai_ms"] is not None else ""
    axes.text(ticket["end_s"], row, f" {outcome}{provider}", va="center", fontsize=11,
              color="black" if ok else "tab:red")


def legend_handles(without_calls: bool) -> list:
    """The timeline's legend: the three provider calls, the wait for the server, /health (and bars without calls)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(color=color, label=f"provider: {name}") for name, color in CALLS]
    handles.append(Patch(facecolor="white", edgecolor=WAITING_COLOR, hatch="///", label="waiting for the server"))
    handles.append(Line2D([], [], color=HEALTH_COLOR, lw=6, marker="|", markersize=16, markeredgewidth=2,
                          label="GET /health"))
    if without_calls:
        handles.append(Patch(color=UNKNOWN_COLOR, label="answer without X-Provider-Calls"))
    return handles


def load_pyplot():
    """matplotlib's pyplot without a display, or CommandError saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise CommandError('drawing needs matplotlib: pip install -e ".[plots]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, measure, print; exit code 1 if a ticket was not created."""
    parser = argparse.ArgumentParser(prog="python -m scripts.stall", description=__doc__.splitlines()[0],
                                     epilog="Exit codes: 0 every ticket answered 201, 1 some did not, "
                                            "2 the API cannot be reached or bad arguments.")
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the API's address (default {DEFAULT_URL})")
    parser.add_argument("--tickets", type=positive_int, default=8, help="tickets in all (default 8)")
    parser.add_argument("--concurrency", type=positive_int, default=4, help="tickets in flight at once (default 4)")
    parser.add_argument("--interval", type=positive_float, default=0.1,
                        help="seconds between an answer of /health and the next probe (default 0.1)")
    parser.add_argument("--seed", type=int, help="seed for the customers and texts (default: random)")
    parser.add_argument("--json", action="store_true", help="print every figure as one JSON object")
    parser.add_argument("--timeline", metavar="FILE", help="draw the run to FILE (.svg or .png; needs matplotlib)")
    args = parser.parse_args(argv)
    if args.timeline and not args.timeline.endswith((".svg", ".png")):
        parser.error("--timeline: the file name must end with .svg or .png")
    if args.timeline:
        load_pyplot()  # before the run, not after 20 seconds of it

    progress(f"sending {args.tickets} tickets to {args.url}, {args.concurrency} at a time ...")
    result = asyncio.run(measure_stall(args.url, args.tickets, args.concurrency, args.interval, args.seed))
    print(json.dumps(result) if args.json else report(result))
    if args.timeline:
        draw_timeline(result, args.timeline)
        progress(f"timeline: {args.timeline}")
    if "ai_busy" in result["errors"]:
        print(quota_advice(), file=sys.stderr)
    return 0 if all(ticket["status"] == 201 for ticket in result["ticket_runs"]) else 1


if __name__ == "__main__":
    run(main)
