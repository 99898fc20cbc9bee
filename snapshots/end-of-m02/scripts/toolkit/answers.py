"""Reading the API's answers: the error code of one that failed."""

from collections.abc import Mapping
from typing import Protocol


class Answer(Protocol):
    """What httpx's and Locust's responses share (and the lab's load.Reply): a status code, headers, a JSON body."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    def json(self) -> object: ...


def error_code(response: Answer) -> str | None:
    """The API's error code (`ai_busy`, ...) of an answer that is not 2xx, else None."""
    if 200 <= response.status_code < 300:
        return None
    try:
        return response.json().get("error") or f"http_{response.status_code}"  # type: ignore[attr-defined]
    except (ValueError, AttributeError):
        return f"http_{response.status_code}"
