"""What every command shares: one-line errors, exit codes (0 ok, 1 check failed, 2 usage/environment), SIGTERM
handled like Ctrl+C, its argparse parser and progress lines."""

import argparse
import signal
import sys
from collections.abc import Callable
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
    if sys.platform == "win32":
        signal.signal(signal.SIGBREAK, _interrupt)  # Ctrl+Break: what the lab's runners stop a command with there
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
