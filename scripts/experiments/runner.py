"""The experiment app under uvicorn as a Service, and what probe, sweep and thread_cliff start before measuring; the
command line of probe and sweep."""

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from scripts.experiments.settings import DEFAULT_PROVIDER_URL, DEFAULT_THREAD_LIMIT, ExperimentSettings
from scripts.toolkit.cli import command_parser, progress
from scripts.toolkit.commands.options import add_json, add_workers, positive_int, route_path
from scripts.toolkit.processes import free_port
from scripts.toolkit.running.apis import started, uvicorn_command
from scripts.toolkit.running.stack import provider_url, running_stack
from scripts.toolkit.services import Service

APP = "scripts.experiments.app:app"
UPSTREAM_PREFIX = "/upstream/"  # the routes that call the provider
# The exit codes of the commands that measure a route (probe, sweep).
MEASURE_EXIT_CODES = (
    "Exit codes: 0 every request answered 2xx, 1 some failed, 2 the app cannot start or be reached, or bad arguments."
)


def experiment_app(settings: ExperimentSettings, workers: int = 1) -> Service:
    """The experiment app under uvicorn on a free port of 127.0.0.1, on asyncio's own loop, without access log."""
    port = free_port()
    return Service("experiments", uvicorn_command(APP, port, workers), port, env=settings.environment())


def route_parser(prog: str, description: str, example: str) -> argparse.ArgumentParser:
    """The parser of a command that measures one route (probe, sweep): the route's path, then the command's own."""
    parser = command_parser(prog, description, MEASURE_EXIT_CODES)
    parser.add_argument("path", type=route_path, help=f"the route to load, e.g. {example}")
    return parser


def parse_route_arguments(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """The command's arguments, then --url or --thread-limit, --workers and --provider-url of the app it starts, and
    --json; flags of the app to start given with --url (an app that already runs) are a usage error."""
    parser.add_argument("--url", help="measure the app already running at this address instead (nothing is started)")
    parser.add_argument(
        "--thread-limit",
        type=positive_int,
        help=f"THREAD_LIMIT of the app it starts (default {DEFAULT_THREAD_LIMIT}, AnyIO's default)",
    )
    add_workers(parser, default=None)
    parser.add_argument(
        "--provider-url",
        help="the provider of the /upstream routes, ending in /v1 (default: a simulator it starts, quota off)",
    )
    add_json(parser)
    args = parser.parse_args(argv)
    given = [flag for flag in ("thread_limit", "workers", "provider_url") if getattr(args, flag) is not None]
    if args.url is not None and given:
        flags = ", ".join("--" + flag.replace("_", "-") for flag in given)
        parser.error(f"{flags}: for the app it starts, not with --url (set them where that app runs)")
    return args


@contextmanager
def served(
    thread_limit: int = DEFAULT_THREAD_LIMIT,
    workers: int = 1,
    provider: str | None = None,
    with_simulator: bool = False,
) -> Iterator[str]:
    """Start the app (and a simulator, quota off, if `with_simulator` without `provider`); yields the app's URL."""
    with running_stack(load=False) as stack:  # no PostgreSQL: the app has no database
        if with_simulator and provider is None:
            progress("starting the simulator (quota off) ...")
            provider = provider_url(stack.kept_simulator())
        settings = ExperimentSettings(provider or DEFAULT_PROVIDER_URL, thread_limit)
        progress(f"starting the experiment app: THREAD_LIMIT={thread_limit}, workers {workers} ...")
        app = stack.resources.enter_context(started(experiment_app(settings, workers=workers)))
        progress(f"experiment app at {app.url}")
        yield app.url


@contextmanager
def app_to_measure(args: argparse.Namespace) -> Iterator[str]:
    """The URL to measure: --url's running app, or one started from the other flags (a simulator for /upstream)."""
    if args.url is not None:
        yield args.url
        return
    with served(
        args.thread_limit or DEFAULT_THREAD_LIMIT,
        args.workers or 1,
        args.provider_url,
        with_simulator=args.path.startswith(UPSTREAM_PREFIX),
    ) as url:
        yield url
