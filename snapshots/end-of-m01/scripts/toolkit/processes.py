"""The one process runner of scripts and tests: free ports, child processes in a group of their own stopped by pid
(`start_process`, `stop_process`), and an ASGI app served in a thread."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

import psutil
import uvicorn

from scripts.toolkit.cli import PROJECT_ROOT, CommandError

# Popen options that give a process a group of its own: stopping it stops its children (uvicorn
# workers), and the terminal's Ctrl+C reaches only us, so we stop it in order.
if sys.platform == "win32":
    OWN_GROUP: dict[str, Any] = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
else:
    OWN_GROUP: dict[str, Any] = {"start_new_session": True}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bind(port: int) -> socket.socket:
    """A TCP socket bound to 127.0.0.1:port (0: a free one), or CommandError if something listens there."""
    # IPPROTO_TCP, not socket()'s 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on a socket that says
    # TCP, and with it on, an answer written in two parts waits for the client's delayed ACK (40 ms on Linux).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    # As uvicorn does: a port whose last server has just stopped (connections in TIME_WAIT) is free. Not on Windows,
    # where that is so anyway and the option would let this socket share a port another one listens on.
    if sys.platform != "win32":
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise CommandError(f"port {port} is in use on 127.0.0.1: stop what runs there or choose another port") from None
    return sock


def check_port_free(port: int) -> None:
    """Raise CommandError if something already listens on 127.0.0.1:port."""
    bind(port).close()


def start_process(
    argv: list[str],
    cwd: Path = PROJECT_ROOT,
    env: dict[str, str] | None = None,
    stdout: IO | int | None = subprocess.DEVNULL,
    stderr: IO | int | None = subprocess.STDOUT,
    text: bool = False,
) -> subprocess.Popen:
    """Start a child process in a group of its own (OWN_GROUP), its input closed: stop it with stop_process()."""
    options = {"cwd": cwd, "env": env, "stdout": stdout, "stderr": stderr, "text": text, **OWN_GROUP}
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, **options)


def stop_process(process: subprocess.Popen, timeout_s: float = 35, graceful: bool = True) -> int:
    """Stop a process started with OWN_GROUP: SIGTERM to it and its children, SIGKILL after `timeout_s` (at once
    without `graceful`); its exit code.

    A Ctrl+C or SIGTERM meanwhile cannot cut it short: the process must not be left behind.
    """
    with signals_ignored():
        for term in (True, False) if graceful else (False,):
            if process.poll() is not None:
                break
            try:
                _signal_group(process, term)
                process.wait(timeout_s)
            except (ProcessLookupError, psutil.NoSuchProcess):
                break
            except subprocess.TimeoutExpired:
                continue
        return process.wait()


def _signal_group(process: subprocess.Popen, term: bool) -> None:
    """SIGTERM (`term`) or SIGKILL to the group of a process started with OWN_GROUP.

    Windows has neither: Ctrl+Break goes to the group instead (uvicorn stops gracefully on it, as on SIGTERM), and
    a kill to the process and every process under it.
    """
    if sys.platform == "win32":
        if term:
            with suppress(OSError):  # it fails where the process shares no console with us: killed instead
                process.send_signal(signal.CTRL_BREAK_EVENT)
                return
        for child in psutil.Process(process.pid).children(recursive=True):
            with suppress(psutil.NoSuchProcess):
                child.kill()
        process.kill()
    else:
        os.killpg(process.pid, signal.SIGTERM if term else signal.SIGKILL)


@contextmanager
def signals_ignored() -> Iterator[None]:
    """Ignore Ctrl+C and SIGTERM for the length of the block (signals reach the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def serve_in_thread(app: Any, port: int = 0, **config: Any) -> Iterator[str]:
    """Serve an ASGI app with uvicorn in a thread of this process on 127.0.0.1:port (0: a free one); yields its URL.

    On asyncio's own loop, as the course measured (uvicorn's default would take uvloop when it is
    installed); `config` adds uvicorn.Config's options. The server stops when the block ends.
    """
    sock = bind(port)
    options = {"log_level": "warning", "access_log": False, **config}
    server = uvicorn.Server(uvicorn.Config(app, loop="asyncio", **options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise CommandError("the server in a thread did not start")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
