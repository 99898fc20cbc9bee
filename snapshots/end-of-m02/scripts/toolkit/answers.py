"""Reading the API's answers: error codes, the Server-Timing and X-Provider-Calls headers, failures in a few words."""

from collections.abc import Mapping
from typing import Protocol


class Answer(Protocol):
    """What httpx's and Locust's responses share (and the lab's load.Reply): a status code, headers, a JSON body."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def json(self) -> object: ...


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


def server_total_ms(response: Answer) -> float | None:
    """The `total` of the answer's Server-Timing header (the API's own time for it), or None."""
    return server_timing(response).get("total")


def error_code(response: Answer) -> str | None:
    """The API's error code (`ai_busy`, ...) of an answer that is not 2xx, else None."""
    if 200 <= response.status_code < 300:
        return None
    try:
        return response.json().get("error") or f"http_{response.status_code}"  # type: ignore[attr-defined]
    except (ValueError, AttributeError):
        return f"http_{response.status_code}"


def describe_failure(failure: Answer | Exception) -> str:
    """A short reason: `503 ai_busy` for an error answer, the exception's name for a transport error."""
    if isinstance(failure, Exception):
        return type(failure).__name__
    code = error_code(failure) or ""
    return f"{failure.status_code} {code.removeprefix(f'http_{failure.status_code}')}".strip()
