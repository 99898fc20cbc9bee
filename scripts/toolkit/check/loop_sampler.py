"""Where a project's API holds its event loop, and why it did not start, found from outside the project's own code
(scripts.check).

`python .../loop_sampler.py APP ARGS`, run in the project's folder with its Python, is uvicorn's own command line
(`python -m uvicorn APP ARGS`) with one more thread: every 10 ms it looks at the stack of the thread that runs the
event loop. While one coroutine of the project stays on that stack from one look to the next for 100 ms or more,
it holds the loop; when it lets go, one line goes to stderr: `held-loop: {JSON}` with how long, the share of a
CPU the process used meanwhile (near 0: a call that waits; near 1: CPU work), the coroutine's file, line and code,
and the project's innermost frame under it (what waited). `read_held()` reads those lines back.

It imports APP itself, and uvicorn serves it through `Observed`: an app that cannot be imported, or whose lifespan
fails its start-up, is told on one line, `api-failed: {JSON}` (the exception's name, its message, the project's
file and line; or the app's own one-line message), which `read_failure()` reads back.

It imports only the standard library and uvicorn, because it runs inside the project's process, beside the
project's own packages. Asyncio's debug mode does not name the line: its "Executing <Task ...> took 2.1 seconds"
shows the task's outermost coroutine (uvicorn's `run_asgi`), and uvicorn turns debug mode off on Python 3.11.
"""

import functools
import importlib
import inspect
import json
import linecache
import os
import sys
import threading
import time
import traceback
from collections import Counter
from pathlib import Path
from types import CodeType
from typing import Any

EVERY_S = 0.01  # how often the loop's stack is looked at
AT_LEAST_S = 0.1  # a coroutine on the stack this long without a break held the loop
MARK = "held-loop: "
FAILED = "api-failed: "
observed: Any = None  # the project's app as uvicorn serves it (`__main__:observed`): an Observed


def main() -> None:
    """Start the sampler on this (the loop's) thread, then uvicorn's command line with this process's arguments,
    serving the project's app through an Observed."""
    global observed
    sys.path[0] = os.getcwd()  # the project's packages, as `python -m uvicorn` finds them; not this folder's modules
    project, (target, *options) = Path.cwd(), sys.argv[1:]
    sampler = threading.Thread(target=watch, args=(threading.get_ident(), project), name="held-loop", daemon=True)
    sampler.start()
    module, _, name = target.partition(":")
    try:
        observed = Observed(functools.reduce(getattr, name.split("."), importlib.import_module(module)), project)
    except Exception as exc:
        tell_failure(failure(exc, project))
        raise
    import uvicorn

    uvicorn.main([f"{__name__}:observed", *options])


class Observed:
    """The project's ASGI app, unchanged but for one thing: a lifespan that fails its start-up is told as values."""

    def __init__(self, app: Any, project: Path):
        self.app, self.project = app, project

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Serve the request; through a lifespan, note what the app says of a failed start-up, and why."""
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        said: list[str] = []  # the message of the app's lifespan.startup.failed

        async def noted(message: dict) -> None:
            if message["type"] == "lifespan.startup.failed":
                said.append(message.get("message", ""))
            await send(message)

        error = None
        try:
            await self.app(scope, receive, noted)
        except Exception as exc:
            error = exc
            raise
        finally:
            if said:
                tell_failure(failure(error, self.project, said[0]))


def failure(exc: BaseException | None, project: Path, said: str | None = None) -> dict:
    """Why the app did not start, as values: the app's own message where it said one line, else the exception's
    name, its message and the project's file and line it came from (a syntax error's own place)."""
    if exc is None or (said is not None and len(said.strip().splitlines()) == 1):
        return {"exception": None, "message": (said or "").strip(), "file": None, "line": None}
    places = [(frame.filename, frame.lineno) for frame in traceback.extract_tb(exc.__traceback__)]
    if isinstance(exc, SyntaxError) and exc.filename:
        places.append((exc.filename, exc.lineno))
    ours = [(Path(file), line) for file, line in places if in_project(Path(file), project)]
    message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    file, line = (ours[-1][0].relative_to(project).as_posix(), ours[-1][1]) if ours else (None, None)
    return {"exception": type(exc).__name__, "message": message, "file": file, "line": line}


def tell_failure(fields: dict) -> None:
    """Write why the app did not start on one line of stderr, for read_failure()."""
    sys.stderr.write(f"{FAILED}{json.dumps(fields)}\n")
    sys.stderr.flush()


def watch(loop_thread: int, project: Path) -> None:
    """Look at the loop thread's stack every EVERY_S; report each coroutine of the project that stayed on it."""
    ours: dict[str, bool] = {}  # file name -> whether it is the project's own code
    held: dict | None = None
    while True:
        time.sleep(EVERY_S)
        now, cpu = time.perf_counter(), time.process_time()
        coroutine, innermost = project_frames(loop_thread, project, ours)
        if held is not None and coroutine is held["frame"]:
            held.update(last=now, cpu_last=cpu, line=coroutine.f_lineno)
        else:
            if held is not None and held["last"] - held["first"] + EVERY_S >= AT_LEAST_S:
                # One write of the whole line: the server's own log lines come from other threads.
                sys.stderr.write(f"{MARK}{json.dumps(describe(held, project))}\n")
                sys.stderr.flush()
            held = None
            if coroutine is not None:
                held = {"frame": coroutine, "first": now, "last": now, "cpu_first": cpu, "cpu_last": cpu}
                held.update(line=coroutine.f_lineno, waits=Counter())
        if held is not None and innermost is not None:
            held["waits"][innermost.f_code, innermost.f_lineno] += 1


def project_frames(loop_thread: int, project: Path, ours: dict[str, bool]) -> tuple:
    """(the innermost coroutine of the project on the loop thread's stack, the innermost frame of the project)."""
    # sys._current_frames() is documented in CPython's sys module ("for internal and specialized purposes"): each
    # thread's current frame. The reading's technique, and the one way to see a thread's stack from another thread.
    frame = sys._current_frames().get(loop_thread)
    innermost = None
    while frame is not None:
        name = frame.f_code.co_filename
        if name not in ours:
            ours[name] = in_project(Path(name), project)
        if ours[name]:
            innermost = innermost or frame
            if frame.f_code.co_flags & inspect.CO_COROUTINE:
                return frame, innermost
        frame = frame.f_back
    return None, innermost


def in_project(path: Path, project: Path) -> bool:
    """A file of the project's own code: in its folder, not in an installed library or a hidden folder (.venv)."""
    if not path.is_absolute() or not path.is_relative_to(project):
        return False
    parts = path.relative_to(project).parts
    return "site-packages" not in parts and not any(part.startswith(".") for part in parts)


def describe(held: dict, project: Path) -> dict:
    """One report: how long (ms), the CPU share meanwhile, where the coroutine was and what waited under it."""
    wall_s = held["last"] - held["first"]
    where = _place(held["frame"].f_code, held["line"], project)
    # What waited: the project's innermost frame seen most often (at the span's ends it may be entering or leaving).
    inner = held["waits"].most_common(1)[0][0] if held["waits"] else None
    waiting_in = None if inner is None or inner[0] is held["frame"].f_code else _place(inner[0], inner[1], project)
    return {
        "ms": round((wall_s + EVERY_S) * 1000),
        "cpu": round((held["cpu_last"] - held["cpu_first"]) / wall_s, 2) if wall_s > 0 else None,
        **where,
        "waiting_in": waiting_in,
    }


def _place(code: CodeType, line: int, project: Path) -> dict:
    path = Path(code.co_filename)
    return {
        "file": path.relative_to(project).as_posix(),
        "line": line,
        "function": code.co_name,
        "code": linecache.getline(code.co_filename, line).strip(),
    }


def read_held(log_text: str) -> list[dict]:
    """The reports in an API's output, in order."""
    return marked_lines(log_text, MARK)


def read_failure(log_text: str) -> dict | None:
    """Why the API did not start, as failure() gave it, from its output; None where it did not say."""
    told = marked_lines(log_text, FAILED)
    return told[-1] if told else None


def marked_lines(log_text: str, mark: str) -> list[dict]:
    """The JSON value after each `mark` in a process's output, in order (a line another thread wrote into at the same
    moment included); the lab's one reader of them, stdlib only as this module is (running/apis.py's too)."""
    decoder, found = json.JSONDecoder(), []
    for line in log_text.splitlines():
        if mark in line:
            found.append(decoder.raw_decode(line, line.index(mark) + len(mark))[0])
    return found


if __name__ == "__main__":
    main()
