"""Per-operation latency figures of a recording: `python -m simulator.stats FILE`."""

import json
import sys
from pathlib import Path

from simulator import cli
from simulator.replay import OPERATIONS, Recording, RecordingError, load_recording


def percentile(values: list[float], share: float) -> float:
    """The `share` quantile (0..1) of the values, interpolating between neighbours like numpy's default."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    position = (len(ordered) - 1) * share
    below = int(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def operation_figures(recording: Recording) -> list[dict]:
    """One row per operation: count, p50, p95, p99 of latency_ms, and p50 of ttft_ms where recorded."""
    rows = []
    for operation in OPERATIONS:
        latencies = [call.latency_ms for call in recording.calls[operation]]
        ttfts = [call.ttft_ms for call in recording.calls[operation] if call.ttft_ms is not None]
        rows.append(
            {
                "operation": operation,
                "count": len(latencies),
                "p50_ms": round(percentile(latencies, 0.50), 1),
                "p95_ms": round(percentile(latencies, 0.95), 1),
                "p99_ms": round(percentile(latencies, 0.99), 1),
                "ttft_p50_ms": round(percentile(ttfts, 0.50), 1) if ttfts else None,
            }
        )
    return rows


def format_table(rows: list[dict]) -> str:
    """The rows as a small aligned text table."""
    lines = [f"{'operation':<10}{'count':>7}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}{'ttft p50':>10}"]
    for row in rows:
        ttft = "-" if row["ttft_p50_ms"] is None else f"{row['ttft_p50_ms']:.1f}"
        lines.append(
            f"{row['operation']:<10}{row['count']:>7}{row['p50_ms']:>10.1f}{row['p95_ms']:>10.1f}"
            f"{row['p99_ms']:>10.1f}{ttft:>10}"
        )
    ticket_ms = sum(row["p50_ms"] for row in rows)
    lines.append(f"one ticket (sum of the medians): {ticket_ms:.1f} ms")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the figures of one recording; exit 2 with one line if it cannot be read."""
    parser = cli.OneLineParser(prog="python -m simulator.stats", description=__doc__)
    parser.add_argument("file", type=Path, help="a JSON Lines recording")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    try:
        recording = load_recording(args.file)
    except RecordingError as error:
        cli.fail(parser.prog, str(error))
    rows = operation_figures(recording)
    if args.json:
        print(json.dumps({"source": recording.source(), "operations": rows}))
    else:
        print(f"{args.file} (source: {recording.source()})")
        print(format_table(rows))
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
