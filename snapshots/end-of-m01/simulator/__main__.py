"""`python -m simulator`: start the simulated AI provider (see --help)."""

import logging
import os
import sys

from simulator import cli, server
from simulator.app import build_app
from simulator.replay import RecordingError, load_recording
from simulator.settings import load_settings


def main(argv: list[str] | None = None) -> int:
    """Read the settings and the recording, print one start-up line, serve until stopped."""
    settings = load_settings(argv, dict(os.environ))
    prog = "python -m simulator"
    try:
        recording = load_recording(settings.recording)
    except RecordingError as error:
        cli.fail(prog, str(error))
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    app = build_app(settings, recording)
    try:
        sock = server.bind_socket(settings.host, settings.port)
    except OSError as error:
        cli.fail(prog, f"cannot listen on {settings.host}:{settings.port}: {error.strerror or error}")
    print(settings.describe(server.bound_port(sock)), flush=True)
    server.run(app, sock, settings.log_level, settings.access_log)
    print("simulator: stopped", flush=True)
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
