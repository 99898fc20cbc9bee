"""What every lab command shares: one-line errors, the exit codes (0 ok, 1 check failed, 2 usage/environment), argparse types."""

import argparse
import signal
import sys
from typing import Callable, NoReturn

from ticket_api.errors import StartupError


class CommandError(Exception):
    """A problem of the environment or the input: printed as one line, exit code 2."""


def run(main: Callable[[], int | None]) -> NoReturn:
    """Run a command's main(); known problems, Ctrl+C and SIGTERM end it with one line instead of a traceback.

    SIGTERM acts like Ctrl+C, so every `finally` runs and stops the processes the command started.
    """
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        code = main()
    except (CommandError, StartupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = 130
    sys.exit(code or 0)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def progress(message: str) -> None:
    """A progress line on stderr, so stdout keeps only the results."""
    print(message, file=sys.stderr, flush=True)


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a number > 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number > 0")
    return value


def route_path(text: str) -> str:
    """An argparse type: a path of the API, such as /lab/sleep/def or /lab/rows/raw?rows=500."""
    if not text.startswith("/"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a path: start it with /, e.g. /lab/sleep/def")
    return text


def parse_levels(text: str) -> list[int]:
    """`1,8,24,64` as a list of positive integers (an argparse type)."""
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give one or more integers >= 1")
    return levels
