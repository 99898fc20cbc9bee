"""What every command of the simulator shares: one-line usage errors and the exit codes."""

import argparse
import sys

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr (no usage block), exit code 2."""

    def error(self, message: str):
        """Print `prog: error: message` and exit with code 2."""
        fail(self.prog, f"{message} (see --help)")


def fail(prog: str, message: str) -> None:
    """Print one error line on stderr and exit with the usage/environment code 2."""
    sys.stderr.write(f"{prog}: error: {message}\n")
    sys.exit(EXIT_USAGE)


def probability(text: str) -> float:
    """An argparse type: a float between 0 and 1."""
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 1")
    return value


def non_negative_float(text: str) -> float:
    """An argparse type: a float >= 0."""
    value = float(text)
    if not value >= 0.0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text!r} is not a number >= 0")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer >= 0")
    return value


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free port) to 65535."""
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port between 0 and 65535")
    return value


def yes_no(text: str) -> bool:
    """An argparse type for switches given in the environment: 1/0, true/false, yes/no, on/off."""
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not one of 1/0, true/false, yes/no, on/off")
