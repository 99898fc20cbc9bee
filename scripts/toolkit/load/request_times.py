"""A Locust plugin of the lab: every request's time as Locust measured it, unrounded, from each process.

scripts/toolkit/load/locust.py passes it to Locust as a second locustfile, `-f locustfiles/tickets.py,
scripts/toolkit/load/request_times.py --times-folder DIR`, and reads what it writes: in every process that
sends requests (a master alone, or each worker), DIR/PID.csv with a row per request, in the order
of FIELDS. A master hands --times-folder on to its workers. Only Locust loads this file: it imports
locust, which monkey-patches its process with gevent.

It also makes --run-time last as long as asked. Locust starts that timer on the gevent loop's clock, which
is only read again when the loop runs. The loop does not run while Locust loads its locustfiles, so the
clock is behind by that long, and a 2 s run ended 1.0 s early on a quiet machine and 1.9 s early on a
busy one.
"""

import csv
import os
from typing import Any, TextIO

import gevent  # type: ignore[import-untyped]  # Locust's own dependency, without type hints
from locust import events
from locust.runners import MasterRunner

FIELDS = ("method", "name", "response_time_ms", "ok")


class TimesFile:
    """This process's CSV, open from test_start to test_stop (users finish during --stop-timeout before it)."""

    def __init__(self) -> None:
        self.file: TextIO | None = None
        self.writer: Any = None  # csv.writer's object (its type is private to the csv module)

    def open(self, folder: str) -> None:
        """Start DIR/PID.csv with its header."""
        self.file = open(os.path.join(folder, f"{os.getpid()}.csv"), "w", newline="")
        self.writer = csv.writer(self.file)
        self.writer.writerow(FIELDS)

    def close(self) -> None:
        """Write out what is buffered; nothing is recorded after this."""
        if self.file is not None:
            self.file.close()
            self.file = self.writer = None


times_file = TimesFile()


@events.init.add_listener
def clock_up_to_date(**_kwargs: Any) -> None:
    """Read the clock gevent's timers count from (gevent's documented loop API) before --run-time's timer starts."""
    gevent.get_hub().loop.update_now()


@events.init_command_line_parser.add_listener
def add_times_folder(parser: Any) -> None:
    """Locust's option --times-folder DIR."""
    parser.add_argument(
        "--times-folder", help="write every request's time to DIR/PID.csv (the lab's plugin)", include_in_web_ui=False
    )


@events.test_start.add_listener
def open_times_file(environment: Any, **_kwargs: Any) -> None:
    """Open this process's CSV, unless it is a master (its workers send the requests)."""
    folder = environment.parsed_options.times_folder if environment.parsed_options else None
    if folder and not isinstance(environment.runner, MasterRunner):
        times_file.open(folder)


@events.request.add_listener
def record_request(request_type: str, name: str, response_time: float, exception: Any, **_kwargs: Any) -> None:
    """One row per request: its method, name, milliseconds (a float) and whether it succeeded."""
    if times_file.writer is not None:
        times_file.writer.writerow((request_type, name, repr(response_time), int(exception is None)))


@events.test_stop.add_listener
def close_times_file(**_kwargs: Any) -> None:
    """Close the CSV once every user has stopped."""
    times_file.close()
