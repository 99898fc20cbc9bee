"""The simulator's settings: command-line flags, each with a SIM_* environment equivalent.

A flag wins over the environment, and the environment wins over the default.
"""

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from simulator import cli

BUNDLED_RECORDING = Path(__file__).parent / "recordings" / "course.jsonl"
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
MODES = ("sample", "sequence")


@dataclasses.dataclass(frozen=True)
class Settings:
    """Everything `python -m simulator` can be told, after flags and SIM_* are merged."""

    host: str = "127.0.0.1"
    port: int = 8100
    speed: float = 1.0
    seed: int = 0
    recording: Path = BUNDLED_RECORDING
    mode: str = "sample"
    quota: int = 100
    error_rate: float = 0.0
    hang_rate: float = 0.0
    hang_s: float = 120.0
    slowdown: float = 0.0
    admin_token: str | None = None
    log_level: str = "warning"
    access_log: bool = False

    def describe(self, port: int) -> str:
        """The one start-up line: every effective setting except the admin token."""
        faults = {"error-rate": self.error_rate, "hang-rate": self.hang_rate, "slowdown": self.slowdown}
        active = [f"{fault}={value:g}" for fault, value in faults.items() if value]
        quota = f"{self.quota}/min per key" if self.quota else "off"
        return (
            f"simulator: serving http://{_url_host(self.host)}:{port}/v1"
            f" recording={_shown_path(self.recording)} mode={self.mode} speed={self.speed:g} seed={self.seed}"
            f" quota={quota} faults={','.join(active) or 'off'} hang-s={self.hang_s:g}"
            f" admin={'loopback or token' if self.admin_token else 'loopback only'}"
            f" log-level={self.log_level} access-log={'on' if self.access_log else 'off'}"
        )


# (flag, field, argparse type, help). The help text of each flag also names its variable.
OPTIONS = (
    ("--host", "host", str, "address to listen on"),
    ("--port", "port", cli.port_number, "port to listen on (0 picks a free one and prints it)"),
    ("--speed", "speed", cli.non_negative_float, "multiply every replayed delay (0.01 for tests, 0 for none)"),
    ("--seed", "seed", int, "seed for latency draws, answers and faults"),
    ("--recording", "recording", Path, "JSON Lines recording to replay"),
    ("--mode", "mode", str, "sample: seeded random draw per operation; sequence: recorded order, looping"),
    ("--quota", "quota", cli.non_negative_int, "chat requests per minute per API key (0: off)"),
    ("--error-rate", "error_rate", cli.probability, "share of AI calls answered 500 or 503"),
    ("--hang-rate", "hang_rate", cli.probability, "share of AI calls answered only after --hang-s"),
    ("--hang-s", "hang_s", cli.non_negative_float, "seconds a hanging call waits, real time (not scaled by --speed)"),
    (
        "--slowdown",
        "slowdown",
        cli.non_negative_float,
        "delay x (1 + F x calls_in_flight / 100), like a loaded provider",
    ),
    ("--admin-token", "admin_token", str, "token that lets non-loopback clients use /admin (never printed)"),
    ("--log-level", "log_level", str, "server log level"),
    ("--access-log", "access_log", cli.yes_no, "log one line per request (off by default: it costs throughput)"),
)
CHOICES = {"mode": MODES, "log_level": LOG_LEVELS}


def env_name(field: str) -> str:
    """The environment variable of a setting: SIM_ plus the field name in capitals."""
    return "SIM_" + field.upper()


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of `python -m simulator`; every default is None so the merge can see what was given."""
    parser = cli.OneLineParser(
        prog="python -m simulator",
        description="An OpenAI-compatible AI provider that replays the latencies of recorded calls.",
        epilog="Each flag has an environment equivalent (shown in brackets); the flag wins. "
        "Exit codes: 0 stopped cleanly, 2 bad flag, bad environment value, bad recording or port in use.",
    )
    defaults = Settings()
    for flag, field, kind, help_text in OPTIONS:
        default = getattr(defaults, field)
        if field == "recording":
            shown_default = "the bundled simulator/recordings/course.jsonl"
        elif isinstance(default, bool):
            shown_default = "yes" if default else "no"
        else:
            shown_default = "none" if default is None else default
        extra: dict[str, Any] = {"choices": CHOICES[field]} if field in CHOICES else {}
        if field == "access_log":
            extra = {"nargs": "?", "const": True, "metavar": "yes|no"}
        parser.add_argument(
            flag,
            dest=field,
            type=kind,
            default=None,
            help=f"{help_text} [{env_name(field)}; default {shown_default}]",
            **extra,
        )
    return parser


def load_settings(argv: list[str] | None, environ: dict[str, str]) -> Settings:
    """Merge flags, SIM_* variables and defaults; exit 2 with one line on a bad value."""
    parser = build_parser()
    args = parser.parse_args(argv)
    values = {}
    for _flag, field, kind, _ in OPTIONS:
        value = getattr(args, field)
        if value is None and env_name(field) in environ:
            value = _from_environment(parser, field, kind, environ[env_name(field)])
        if value is not None:
            values[field] = value
    settings = Settings(**values)
    if settings.error_rate + settings.hang_rate > 1.0:
        parser.error("--error-rate plus --hang-rate must not exceed 1")
    return settings


def _from_environment(parser: argparse.ArgumentParser, field: str, kind, text: str):
    """Convert one SIM_* value with the flag's own type and choices."""
    try:
        value = kind(text)
    except (ValueError, argparse.ArgumentTypeError) as error:
        parser.error(f"{env_name(field)}={text!r}: {error}")
    if field in CHOICES and value not in CHOICES[field]:
        parser.error(f"{env_name(field)}={text!r}: choose from {', '.join(CHOICES[field])}")
    return value


def _url_host(host: str) -> str:
    """A host as it appears in a URL (IPv6 addresses in brackets)."""
    return f"[{host}]" if ":" in host else host


def _shown_path(path: Path) -> str:
    """The recording path to show: short for the bundled file, as given otherwise."""
    return "bundled:course.jsonl" if path == BUNDLED_RECORDING else str(path)
