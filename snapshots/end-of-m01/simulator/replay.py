"""Recordings of provider calls (JSON Lines) and the draws that replay their latencies.

One line per recorded call:
    {"operation": "classify", "endpoint": "chat", "model": "gpt-4o-mini", "latency_ms": 912.4,
     "ttft_ms": 270.1, "prompt_tokens": 212, "completion_tokens": 14}
and optionally metadata lines such as {"kind": "meta", "source": "generated", ...}.
"""

import dataclasses
import json
import math
import random
from pathlib import Path

OPERATIONS = ("classify", "draft", "embed")
ENDPOINT_OF = {"classify": "chat", "draft": "chat", "embed": "embeddings"}


class RecordingError(Exception):
    """A recording that cannot be read or does not follow the format."""


@dataclasses.dataclass(frozen=True, slots=True)
class RecordedCall:
    """One recorded provider call."""

    operation: str
    endpoint: str
    model: str
    latency_ms: float
    prompt_tokens: int
    completion_tokens: int
    ttft_ms: float | None = None


@dataclasses.dataclass
class Recording:
    """The calls of a recording, grouped by operation in recorded order, plus its metadata lines."""

    calls: dict[str, list[RecordedCall]]
    meta: list[dict]

    def models(self) -> list[str]:
        """The distinct model names in the recording, sorted."""
        return sorted({call.model for calls in self.calls.values() for call in calls})

    def source(self) -> str:
        """Where the recording says it comes from ("generated", "recorded", ...), or "unknown"."""
        return next((str(line["source"]) for line in self.meta if "source" in line), "unknown")


def load_recording(path: Path) -> Recording:
    """Read and check a recording; raise RecordingError naming the file and line on any problem."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise RecordingError(f"cannot read recording {str(path)!r}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise RecordingError(f"cannot read recording {str(path)!r}: not UTF-8 text") from None
    calls: dict[str, list[RecordedCall]] = {operation: [] for operation in OPERATIONS}
    meta: list[dict] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError("a line must be a JSON object")
            if record.get("kind") == "meta":
                meta.append(record)
                continue
            call = parse_call(record)
        except ValueError as error:
            raise RecordingError(f"recording {str(path)!r} line {number}: {error}") from None
        calls[call.operation].append(call)
    missing = [operation for operation in OPERATIONS if not calls[operation]]
    if missing:
        raise RecordingError(f"recording {str(path)!r} has no calls for: {', '.join(missing)}")
    return Recording(calls=calls, meta=meta)


def parse_call(record: dict) -> RecordedCall:
    """Check one call line and turn it into a RecordedCall; raise ValueError saying what is wrong."""
    operation = record.get("operation")
    if operation not in OPERATIONS:
        raise ValueError(f"operation must be one of {', '.join(OPERATIONS)}, not {operation!r}")
    if record.get("endpoint") != ENDPOINT_OF[operation]:
        raise ValueError(f"endpoint must be {ENDPOINT_OF[operation]!r} for operation {operation!r}")
    if not isinstance(record.get("model"), str) or not record["model"]:
        raise ValueError("model must be a non-empty string")
    latency_ms = _number(record, "latency_ms")
    ttft_ms = _number(record, "ttft_ms") if record.get("ttft_ms") is not None else None
    if ttft_ms is not None and ttft_ms > latency_ms:
        raise ValueError("ttft_ms must not exceed latency_ms")
    return RecordedCall(
        operation=operation,
        endpoint=record["endpoint"],
        model=record["model"],
        latency_ms=latency_ms,
        prompt_tokens=_count(record, "prompt_tokens"),
        completion_tokens=_count(record, "completion_tokens"),
        ttft_ms=ttft_ms,
    )


def _number(record: dict, field: str) -> float:
    """A required number >= 0."""
    value = record.get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise ValueError(f"{field} must be a number >= 0, not {value!r}")
    return float(value)


def _count(record: dict, field: str) -> int:
    """A required integer >= 0."""
    value = record.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{field} must be an integer >= 0, not {value!r}")
    return value


class Replay:
    """Picks the recorded call to replay for each new call of an operation."""

    def __init__(self, recording: Recording, mode: str, seed: int) -> None:
        if mode not in ("sample", "sequence"):
            raise ValueError(f"unknown replay mode {mode!r}")
        self.mode = mode
        self._calls = recording.calls
        # One generator per operation, so classify draws do not depend on how many embeds came first.
        self._random = {operation: random.Random(f"{seed}:{operation}") for operation in OPERATIONS}
        self._position = dict.fromkeys(OPERATIONS, 0)

    def next_call(self, operation: str) -> RecordedCall:
        """The next recorded call of this operation: a seeded random one, or the next in order."""
        calls = self._calls[operation]
        if self.mode == "sample":
            return self._random[operation].choice(calls)
        position = self._position[operation]
        self._position[operation] = (position + 1) % len(calls)
        return calls[position]
