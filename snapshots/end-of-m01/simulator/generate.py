"""Generate the bundled recording, simulator/recordings/course.jsonl, from a seed.

The file is GENERATED, not recorded: for each operation, seeded lognormal draws are scaled so
that their median equals the course's published median exactly (classify 910 ms, draft 1100 ms,
embed 200 ms: one ticket 2210 ms), with p95 about 1.5 x the median. Chat calls get a time to
first token of 25-35 % of their latency. Run `python -m simulator.generate` to write it again,
`python -m simulator.generate --check` to confirm the bundled file still matches.
"""

import json
import math
import random
import sys
from pathlib import Path

from simulator import cli
from simulator.replay import OPERATIONS
from simulator.settings import BUNDLED_RECORDING

DEFAULT_SEED = 2210
DEFAULT_CALLS = 301
MEDIAN_MS = {"classify": 910.0, "draft": 1100.0, "embed": 200.0}
P95_OVER_MEDIAN = 1.5
# A lognormal's p95 is its median x exp(1.645 sigma); pick sigma so that ratio is P95_OVER_MEDIAN.
SIGMA = math.log(P95_OVER_MEDIAN) / 1.6449
TTFT_SHARE = (0.25, 0.35)
DRAFT_MS_PER_TOKEN = 5.5
CHAT_MODEL = "gpt-4o-mini"
EMBEDDING_MODEL = "text-embedding-3-small"


def generate_recording(seed: int = DEFAULT_SEED, calls_per_operation: int = DEFAULT_CALLS) -> list[dict]:
    """The lines of a generated recording: one meta line, then calls in ticket order."""
    if calls_per_operation < 1 or calls_per_operation % 2 == 0:
        raise ValueError("calls_per_operation must be odd, so that the median is one recorded call")
    rng = random.Random(seed)
    latencies = {
        operation: scaled_latencies(rng, MEDIAN_MS[operation], calls_per_operation) for operation in OPERATIONS
    }
    lines: list[dict] = [meta_line(seed, calls_per_operation)]
    for index in range(calls_per_operation):
        for operation in OPERATIONS:
            lines.append(call_line(rng, operation, latencies[operation][index]))
    return lines


def scaled_latencies(rng: random.Random, median_ms: float, count: int) -> list[float]:
    """`count` right-skewed latencies (ms, 0.1 ms steps) whose middle value is exactly `median_ms`."""
    draws = [rng.lognormvariate(0.0, SIGMA) for _ in range(count)]
    middle = sorted(draws)[count // 2]
    # Rounding keeps the order, so the middle draw stays the middle and becomes exactly median_ms.
    return [round(draw / middle * median_ms, 1) for draw in draws]


def call_line(rng: random.Random, operation: str, latency_ms: float) -> dict:
    """One recorded call with plausible token counts (and a time to first token for chat)."""
    if operation == "embed":
        return {
            "operation": "embed",
            "endpoint": "embeddings",
            "model": EMBEDDING_MODEL,
            "latency_ms": latency_ms,
            "prompt_tokens": rng.randint(40, 160),
            "completion_tokens": 0,
        }
    ttft_ms = round(latency_ms * rng.uniform(*TTFT_SHARE), 1)
    if operation == "classify":
        prompt_tokens, completion_tokens = rng.randint(180, 320), rng.randint(12, 20)
    else:
        # A draft's length drives its time: tokens arrive at a steady pace after the first one.
        prompt_tokens = rng.randint(220, 420)
        completion_tokens = max(20, round((latency_ms - ttft_ms) / DRAFT_MS_PER_TOKEN))
    return {
        "operation": operation,
        "endpoint": "chat",
        "model": CHAT_MODEL,
        "latency_ms": latency_ms,
        "ttft_ms": ttft_ms,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
    }


def meta_line(seed: int, calls_per_operation: int) -> dict:
    """The first line: says the file is generated, how, and what it matches."""
    return {
        "kind": "meta",
        "source": "generated",
        "note": "Generated, not recorded: seeded lognormal latencies scaled so that each operation's median "
        "equals the course's published median (classify 910 ms, draft 1100 ms, embed 200 ms; one ticket 2210 ms).",
        "generator": f"python -m simulator.generate --seed {seed} --calls {calls_per_operation}",
        "seed": seed,
        "calls_per_operation": calls_per_operation,
        "median_ms": MEDIAN_MS,
        "p95_over_median": P95_OVER_MEDIAN,
        "ttft_share": list(TTFT_SHARE),
    }


def render(lines: list[dict]) -> str:
    """The JSON Lines text of a recording."""
    return "".join(json.dumps(line) + "\n" for line in lines)


def main(argv: list[str] | None = None) -> int:
    """Write (or --check) the generated recording."""
    parser = cli.OneLineParser(prog="python -m simulator.generate", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=BUNDLED_RECORDING, help="file to write (default: the bundled course.jsonl)"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    parser.add_argument(
        "--calls", type=int, default=DEFAULT_CALLS, help=f"calls per operation, odd (default {DEFAULT_CALLS})"
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if --out differs from what would be written"
    )
    args = parser.parse_args(argv)
    try:
        text = render(generate_recording(args.seed, args.calls))
    except ValueError as error:
        parser.error(str(error))
    if args.check:
        try:
            same = args.out.read_text(encoding="utf-8") == text
        except OSError as error:
            cli.fail(parser.prog, f"cannot read {str(args.out)!r}: {error.strerror}")
        print(f"{args.out}: {'up to date' if same else 'differs from the generator output'}")
        return cli.EXIT_OK if same else cli.EXIT_CHECK_FAILED
    try:
        args.out.write_text(text, encoding="utf-8")
    except OSError as error:
        cli.fail(parser.prog, f"cannot write {str(args.out)!r}: {error.strerror}")
    print(f"wrote {args.out}: {args.calls} calls per operation, seed {args.seed}")
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
