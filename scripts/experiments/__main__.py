"""Serve the experiment app in the foreground, for your own tools: `python -m scripts.experiments [--port 8200]`.

The app of the wider reading's experiments (`scripts/README.md`, "Experiments"): its routes wait,
compute, serialize and call the provider in several ways each. probe, sweep and thread_cliff
start one of their own; this one is for measuring it by hand (curl, ab, Locust, your browser at
/docs). It listens on 127.0.0.1 only; Ctrl+C stops it.
"""

import contextlib
import os

from scripts.experiments.runner import APP
from scripts.experiments.settings import DEFAULT_PROVIDER_URL, DEFAULT_THREAD_LIMIT, ExperimentSettings
from scripts.toolkit.cli import CommandError, command_parser, progress, run
from scripts.toolkit.commands.options import add_workers, positive_int
from scripts.toolkit.processes import check_port_free
from scripts.toolkit.running.apis import uvicorn_command
from scripts.toolkit.running.commands import running

DEFAULT_PORT = 8200
EXIT_CODES = "Exit codes: 0 stopped (Ctrl+C or SIGTERM), 2 the port is in use or bad arguments."


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, then serve until Ctrl+C."""
    parser = command_parser("python -m scripts.experiments", __doc__, EXIT_CODES)
    parser.add_argument("--port", type=positive_int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    parser.add_argument(
        "--thread-limit",
        type=positive_int,
        default=DEFAULT_THREAD_LIMIT,
        help=f"tokens of AnyIO's thread pool, the one plain def routes use (default {DEFAULT_THREAD_LIMIT})",
    )
    add_workers(parser)
    parser.add_argument(
        "--provider-url",
        default=DEFAULT_PROVIDER_URL,
        help=f"the provider of the /upstream routes (default {DEFAULT_PROVIDER_URL}: python -m simulator)",
    )
    args = parser.parse_args(argv)

    check_port_free(args.port)
    # The app reads its settings from the environment when it starts, in each worker process.
    settings = ExperimentSettings(args.provider_url, args.thread_limit).environment()
    progress(
        f"experiment app at http://127.0.0.1:{args.port} (THREAD_LIMIT={args.thread_limit}, workers {args.workers},"
        f" provider {args.provider_url}); Ctrl+C stops it"
    )
    # uvicorn's output goes to this terminal; no access log: a log line per request costs time you would measure.
    argv = [*uvicorn_command(APP, args.port, args.workers), "--log-level", "warning"]
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl+C or SIGTERM: `running` has stopped the app gracefully
        with running(argv, env={**os.environ, **settings}, stdout=None, stderr=None) as server:
            if server.wait() != 0:
                raise CommandError(f"the experiment app stopped by itself, exit code {server.returncode}")
    progress("stopped")
    return 0


if __name__ == "__main__":
    run(main)
