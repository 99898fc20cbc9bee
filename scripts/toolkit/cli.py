"""What every lab command shares: one-line errors, exit codes (0 ok, 1 check failed, 2 usage/environment), SIGTERM
handled like Ctrl+C, its argparse parser, progress lines and their clock, argparse types and plain-text tables."""

import argparse
import signal
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import NoReturn

from ticket_api.errors import StartupError

PROJECT_ROOT = Path(__file__).resolve().parents[2]


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


def command_parser(prog: str, description: str, epilog: str | None = None) -> argparse.ArgumentParser:
    """A lab command's argparse parser: its `--help` shows the description (the module's docstring) as written."""
    return argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter, epilog=epilog
    )


def progress(message: str) -> None:
    """A progress line on stderr, so stdout keeps only the results."""
    print(message, file=sys.stderr, flush=True)


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 1")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 0")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a number > 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number > 0")
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


def format_table(headers: list[str], rows: list[list]) -> str:
    """Columns padded to their widest cell: the first one left-aligned, the others right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=False)]

    def line(cells: list) -> str:
        padded = [
            str(cell).ljust(w) if i == 0 else str(cell).rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=False))
        ]
        return "  ".join(padded).rstrip()

    return "\n".join(line(cells) for cells in [headers, *rows])


def fmt_ms(value: float | None) -> str:
    """Milliseconds for a table: `12.3`, `1,955` past a thousand, `-` when there is no figure."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.1f}"


def readable_ms(ms: float) -> str:
    """`8.74 s` from a thousand milliseconds on, else `3.4 ms`."""
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.1f} ms"
