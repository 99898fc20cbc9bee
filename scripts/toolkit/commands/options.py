"""The lab's commands' options: argparse types, the folder a run writes to, the clock of its progress lines."""

import argparse
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from scripts.stall import positive_float, positive_int  # the lesson's own: one home
from scripts.toolkit.cli import PROJECT_ROOT

__all__ = ["positive_float", "positive_int"]


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 0")
    return value


def route_path(text: str) -> str:
    """An argparse type: a path of the API, such as /sleep/def or /rows/raw?rows=500."""
    if not text.startswith("/"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a path: start it with /, e.g. /sleep/def")
    return text


def one_or_more_of(choices: Sequence[str]) -> Callable[[str], list[str]]:
    """An argparse type: `a,b` as a list of some of `choices`, separated by commas."""

    def parse(text: str) -> list[str]:
        picked = [part.strip() for part in text.split(",") if part.strip()]
        if not picked or any(part not in choices for part in picked):
            raise argparse.ArgumentTypeError(f"{text!r}: give one or more of {', '.join(choices)}, separated by commas")
        return picked

    return parse


def parse_levels(text: str) -> list[int]:
    """`1,8,24,64` as a list of positive integers (an argparse type)."""
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give one or more integers >= 1")
    return levels


class Clock:
    """Time since the command started, shown as `m:ss` in progress lines."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def __str__(self) -> str:
        minutes, seconds = divmod(int(time.monotonic() - self.started), 60)
        return f"{minutes}:{seconds:02d}"


def output_folder(out: str | None, name: str) -> Path:
    """The folder `out`, or a new `.lab/NAME-YYYYmmdd-HHMMSS` in the project (.lab is not committed)."""
    folder = Path(out) if out else PROJECT_ROOT / ".lab" / f"{name}-{datetime.now():%Y%m%d-%H%M%S}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
