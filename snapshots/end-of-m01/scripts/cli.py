"""What every lab command shares: one-line errors and the exit codes (0 ok, 1 check failed, 2 usage/environment)."""

import sys
from typing import Callable, NoReturn

from ticket_api.errors import StartupError


class CommandError(Exception):
    """A problem of the environment or the input: printed as one line, exit code 2."""


def run(main: Callable[[], int | None]) -> NoReturn:
    """Run a command's main(); known problems and Ctrl+C end it with one line instead of a traceback."""
    try:
        code = main()
    except (CommandError, StartupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = 130
    sys.exit(code or 0)


def progress(message: str) -> None:
    """A progress line on stderr, so stdout keeps only the results."""
    print(message, file=sys.stderr, flush=True)
