"""Send 8 tickets, 4 at a time, while GET /health is asked every 0.1 s: `python -m scripts.stall`.

/health does no work, so it should answer in milliseconds. If it needs seconds, something holds
the API's event loop: a waiting call without `await` (INTAKE_MODE=blocking).
"""

import argparse
import asyncio
import json
import sys

from scripts.toolkit.charts import draw_timeline, load_pyplot
from scripts.toolkit.cli import positive_float, positive_int, progress, run
from scripts.toolkit.stalls import measure_stall
from ticket_api.config import load_settings

DEFAULT_URL = "http://127.0.0.1:8000"


def report(result: dict) -> str:
    """The two lines of the course."""
    statuses = str(result["statuses"])
    unanswered = sum(1 for t in result["ticket_runs"] if t["status"] is None)
    if unanswered:
        statuses += f", {unanswered} without an answer"
    health = f"{result['health_answers']} answers"
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


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, measure, print; exit code 1 if a ticket was not created."""
    parser = argparse.ArgumentParser(
        prog="python -m scripts.stall",
        description=__doc__.splitlines()[0],
        epilog="Exit codes: 0 every ticket answered 201, 1 some did not, 2 the API cannot be reached or bad arguments.",
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
