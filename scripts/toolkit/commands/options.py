"""The lab's commands' options: the options several commands share, each declared once (listed in this folder's
__init__.py); argparse types; the folder a run writes to; the clock of its progress lines.

The student's scripts (scripts/stall.py, burst.py, db.py) declare their own: they import nothing of the lab's folders.
"""

import argparse
import importlib.util
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from scripts.stall import positive_float, positive_int  # the lesson's own: one home
from scripts.toolkit.cli import PROJECT_ROOT, CommandError

__all__ = ["positive_float", "positive_int"]

LOOPS = ("asyncio", "uvloop")  # asyncio's own loop is the course's; uvloop is the optional extra


def add_json(parser: argparse.ArgumentParser, what: str = "the figures") -> None:
    """--json: print `what` as JSON instead of text."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def add_out(parser: argparse.ArgumentParser, name: str, holds: str = "the figures and logs") -> None:
    """--out: the folder a run writes to; by default output_folder()'s new .lab/NAME-DATE-TIME."""
    parser.add_argument("--out", help=f"folder for {holds} (default .lab/{name}-DATE-TIME)")


def add_no_held(parser: argparse.ArgumentParser, per: str, chart: str, note: str = "") -> None:
    """--no-held: no recording of what the server held during each `per` (args.held is False), nor its `chart`."""
    parser.add_argument(
        "--no-held",
        dest="held",
        action="store_false",
        help=f"do not record what the server held during each {per} (nor draw {chart}){note}",
    )


def add_speed(parser: argparse.ArgumentParser, default: float, example: str = "") -> None:
    """--speed: the speed of the simulators a command starts (1: the recorded latencies; 0.05: twenty times faster)."""
    parser.add_argument(
        "--speed", type=positive_float, default=default, help=f"the simulator's speed{example} (default {default:g})"
    )


def add_loop(parser: argparse.ArgumentParser, of: str = "the API", several: bool = False) -> None:
    """--loop: the event loop the command's apps run on, asyncio (the course's) or uvloop; with `several`, a list."""
    choices = "asyncio (the course's, default), uvloop" + (", or asyncio,uvloop for a row per loop" if several else "")
    parser.add_argument(
        "--loop",
        type=parse_loops if several else event_loop,
        default=["asyncio"] if several else "asyncio",
        help=f"the event loop of {of}: {choices}",
    )


def add_duration(
    parser: argparse.ArgumentParser, default: float, per: str, kind: Callable[[str], float] = positive_float
) -> None:
    """--duration: the seconds measured `per` level, run or window (`kind`: positive_int where a tool takes whole
    seconds)."""
    parser.add_argument("--duration", type=kind, default=default, help=f"seconds measured {per} (default {default:g})")


def add_passes(parser: argparse.ArgumentParser, default: int, per: str) -> None:
    """--passes: the runs `per` mode (and level): `per` says what the command prints of them."""
    parser.add_argument("--passes", type=positive_int, default=default, help=f"runs {per} (default {default})")


def add_workers(
    parser: argparse.ArgumentParser, default: int | None = 1, also: tuple[str, ...] = (), note: str = ""
) -> None:
    """--workers: the uvicorn worker processes of the app a command starts, as uvicorn and `fastapi run` name them
    (`also`: other spellings of it)."""
    parser.add_argument(
        "--workers",
        *also,
        dest="workers",
        type=positive_int,
        default=default,
        help=f"uvicorn worker processes of the app it starts{note} (default {default or 1})",
    )


def event_loop(text: str) -> str:
    """`asyncio` or `uvloop` (an argparse type); uvloop must be installed, else CommandError (exit code 2)."""
    if text not in LOOPS:
        raise argparse.ArgumentTypeError(f"{text!r}: give {' or '.join(LOOPS)}")
    if text == "uvloop" and importlib.util.find_spec("uvloop") is None:
        raise CommandError('uvloop is not installed: python -m pip install -e ".[uvloop]" (macOS and Linux only)')
    return text


def parse_loops(text: str) -> list[str]:
    """`asyncio,uvloop` as a list of event loops (an argparse type), each checked by event_loop()."""
    loops = [event_loop(part.strip()) for part in text.split(",") if part.strip()]
    if not loops:
        raise argparse.ArgumentTypeError(f"{text!r}: give {' or '.join(LOOPS)}, or both separated by a comma")
    return loops


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


def parse_levels_or_none(text: str) -> list[int]:
    """`0` for none, else levels as parse_levels reads them (an argparse type)."""
    return [] if text.strip() == "0" else parse_levels(text)


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
