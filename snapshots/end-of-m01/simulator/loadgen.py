"""A small keep-alive HTTP/1.1 load generator over raw asyncio streams, run as its own process.

`python -m simulator.bench` starts one or more of these so that the generator is never the
ceiling: each process drives many connections from one event loop (uvloop where installed),
parses only the status line and a few headers, and writes one JSON line when it is done.
"""

import asyncio
import json
import sys
import time
from pathlib import Path

import orjson

from simulator import cli

try:
    from uvloop import run as run_loop
except ImportError:  # the lab's default install, and Windows: asyncio's own loop, as uvicorn picks
    run_loop = asyncio.run

# The three calls of one ticket, in the order the ticket API makes them.
TICKET_CALLS = (
    ("/v1/chat/completions", {"operation": "classify"}),
    ("/v1/chat/completions", {"operation": "draft"}),
    ("/v1/embeddings", None),
)


def build_request(host: str, port: int, path: str, operation: dict | None) -> bytes:
    """One complete HTTP/1.1 request, as bytes, for a chat or embeddings call."""
    if operation is None:
        body = {"model": "text-embedding-3-small", "input": "Refund for a double charge", "dimensions": 256}
    else:
        body = {
            "model": "gpt-4o-mini",
            "metadata": operation,
            "messages": [{"role": "user", "content": "Subject: Refund\n\nI was charged twice."}],
        }
    payload = orjson.dumps(body)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer bench\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


def ticket_requests(host: str, port: int) -> list[bytes]:
    """The three requests of one ticket (classify, draft, embed), ready to send."""
    return [build_request(host, port, path, operation) for path, operation in TICKET_CALLS]


async def read_response(reader: asyncio.StreamReader, capture: bytes = b"x-sim-delay-ms") -> tuple[int, str]:
    """Read one response; return its status and the value of the header `capture` ("" if absent)."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    captured = ""
    prefix = capture + b":"
    for line in head.lower().split(b"\r\n")[1:]:
        if line.startswith(b"content-length:"):
            length = int(line[15:])
        elif line.startswith(prefix):
            captured = line[len(prefix) :].strip().decode()
    if length:
        await reader.readexactly(length)
    return status, captured


async def drive_connection(
    host: str,
    port: int,
    requests: list[bytes],
    offset: int,
    start_at: float,
    deadline: float,
    calls: list,
    capture: bytes = b"x-sim-delay-ms",
    give_up_s: float | None = None,
) -> None:
    """From `start_at`, send requests back to back on one keep-alive connection until the deadline.

    Each call is kept as (start, end, status, value of the `capture` header). With `give_up_s`, a call
    still unanswered that long after the deadline is given up (a TimeoutError), so that the run ends.
    """
    await asyncio.sleep(start_at - time.monotonic())
    reader, writer = await asyncio.open_connection(host, port)
    try:
        index = offset
        while time.monotonic() < deadline:
            request = requests[index % len(requests)]
            index += 1
            started = time.monotonic()
            writer.write(request)
            if give_up_s is None:
                status, captured = await read_response(reader, capture)
            else:
                async with asyncio.timeout(deadline + give_up_s - time.monotonic()):
                    status, captured = await read_response(reader, capture)
            calls.append((started, time.monotonic(), status, captured))
    finally:
        writer.close()


async def probe_health(
    host: str, port: int, start_at: float, deadline: float, interval_s: float, timings_ms: list
) -> None:
    """From `start_at`, ask GET /health every interval until the deadline and keep each answer's time."""
    await asyncio.sleep(start_at - time.monotonic())
    reader, writer = await asyncio.open_connection(host, port)
    request = f"GET /health HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    try:
        while time.monotonic() < deadline:
            started = time.perf_counter()
            writer.write(request)
            await read_response(reader)
            timings_ms.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(interval_s)
    finally:
        writer.close()


async def run_load(
    host: str,
    port: int,
    connections: int,
    duration_s: float,
    health_interval_s: float,
    ramp_s: float = 0.0,
    requests: list[bytes] | None = None,
    capture: bytes = b"x-sim-delay-ms",
    give_up_s: float | None = None,
) -> dict:
    """Drive `connections` connections for `duration_s` seconds; return the raw measurements.

    Connections start evenly spread over the first `ramp_s` seconds, as real clients do; calls
    started after the ramp are the ones to measure (`measure_from`). By default the requests are
    the three calls of a ticket to the simulator; `python -m scripts.bench` passes its own. With
    `give_up_s`, a call unanswered that long after the end is given up (an error of its connection).
    """
    requests = requests or ticket_requests(host, port)
    calls: list = []
    health_ms: list = []
    started = time.monotonic()
    deadline = started + ramp_s + duration_s
    jobs = [
        drive_connection(
            host, port, requests, i, started + ramp_s * i / connections, deadline, calls, capture, give_up_s
        )
        for i in range(connections)
    ]
    if health_interval_s > 0:
        jobs.append(probe_health(host, port, started + ramp_s, deadline, health_interval_s, health_ms))
    results = await asyncio.gather(*jobs, return_exceptions=True)
    errors = [repr(result) for result in results if isinstance(result, BaseException)]
    return {
        "calls": calls,
        "measure_from": started + ramp_s,
        "health_ms": health_ms,
        "errors": errors[:5],
        "error_count": len(errors),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the load; write one JSON line with every call's (start, end, status, x-sim-delay-ms)."""
    parser = cli.OneLineParser(prog="python -m simulator.loadgen", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="simulator address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, required=True, help="simulator port")
    parser.add_argument("--connections", type=int, default=50, help="keep-alive connections (default 50)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds of load after the ramp (default 5)")
    parser.add_argument("--ramp", type=float, default=0.0, help="seconds over which connections start (default 0)")
    parser.add_argument(
        "--health-interval", type=float, default=0.0, help="also probe /health every S seconds (0: off)"
    )
    parser.add_argument("--out", type=Path, help="write the JSON to this file instead of stdout")
    args = parser.parse_args(argv)
    if args.connections < 1 or args.duration <= 0 or args.ramp < 0:
        parser.error("--connections must be >= 1, --duration > 0 and --ramp >= 0")
    result = run_loop(run_load(args.host, args.port, args.connections, args.duration, args.health_interval, args.ramp))
    text = json.dumps(result) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        # The bench reads a file: a large result through a pipe arrived cut short on the lab machine.
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
