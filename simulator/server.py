"""Running an ASGI app under uvicorn (uvloop + httptools where available) on a socket bound first.

Binding first lets `--port 0` pick a free port and print it, and turns "port in use" into one
clear line instead of a traceback.
"""

import asyncio
import gc
import logging
import signal
import socket
import sys

import uvicorn

BACKLOG = 2048
CALLS_GRACE_S = 2.0  # at a stop, calls in flight get this long to finish before they are answered 503
GRACEFUL_SHUTDOWN_S = 3  # a task still running this long after the stop is cancelled
# An idle connection is kept longer than clients keep theirs (httpx and aiohttp: 5 s), so that the client, not
# the server, closes it: a request sent just as the server closes an idle connection would be lost.
KEEP_ALIVE_S = 30
GC_THRESHOLD = 10_000  # new objects (net) between two young garbage-collector passes; Python's is 700
STOP_SIGNALS = [signal.SIGINT, signal.SIGTERM]
if sys.platform == "win32":
    STOP_SIGNALS.append(signal.SIGBREAK)  # Ctrl+Break: how the lab's runners stop it there (uvicorn handles it too)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port; raises OSError (e.g. port in use)."""
    family, kind, protocol, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, protocol)
    try:
        if sys.platform != "win32":  # Windows binds a port in TIME_WAIT anyway; there it would share one in use
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def bound_port(sock: socket.socket) -> int:
    """The port the socket really listens on (useful after binding port 0)."""
    return sock.getsockname()[1]


def run(app, sock: socket.socket, log_level: str, access_log: bool) -> None:
    """Serve until SIGINT or SIGTERM (or Ctrl+Break on Windows), then stop cleanly (returns instead of raising).

    If the app has a `stop()` method, it is called CALLS_GRACE_S after the shutdown starts.
    """
    config = uvicorn.Config(
        app,
        # uvloop when installed (the lab's `uvloop` extra; never on Windows), else asyncio's own loop;
        # httptools when installed, else h11.
        loop="auto",
        http="auto",
        lifespan="off",
        log_level=log_level,
        access_log=access_log,
        server_header=False,
        # X-Forwarded-For is believed only from a proxy on this machine: behind one, remote clients
        # keep their own address, so the loopback-only admin check cannot be fooled.
        proxy_headers=True,
        forwarded_allow_ips="127.0.0.1,::1",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        timeout_keep_alive=KEEP_ALIVE_S,
        backlog=BACKLOG,
    )
    if access_log:
        # Access lines are logged at INFO: show them even when the server's level is quieter.
        logging.getLogger("uvicorn.access").setLevel(logging.INFO)
    server = StoppingServer(config, on_stop=getattr(app, "stop", None))
    # Everything alive now lives as long as the server: keep it out of the garbage collector's
    # full passes, which otherwise stall every waiting call for tens of milliseconds.
    gc.freeze()
    # A young pass walks every object the waiting calls keep alive (about 45,000 at 1,200 calls):
    # 3-40 ms with the loop standing still. At Python's threshold (700) such passes came about
    # 30 times a second, because objects dying in older generations hold the count down while
    # the young one fills. The simulator makes almost no reference cycles, so a pass per
    # GC_THRESHOLD objects still frees them promptly.
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])

    def request_stop(number, frame) -> None:
        """Ask the server to stop: for a signal that comes before uvicorn takes the signals over."""
        server.should_exit = True

    # uvicorn re-raises the stop signal after its graceful shutdown; this handler absorbs it, so
    # Ctrl+C and `kill` end with exit code 0 and no traceback, and an early signal is not lost.
    previous = {number: signal.signal(number, request_stop) for number in STOP_SIGNALS}
    try:
        server.run(sockets=[sock])
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        sock.close()


class StoppingServer(uvicorn.Server):
    """A uvicorn server that lets calls in flight finish for a while, then tells the app to stop them."""

    def __init__(self, config: uvicorn.Config, on_stop=None) -> None:
        super().__init__(config)
        self.on_stop = on_stop

    async def shutdown(self, sockets=None) -> None:
        """Shut down as uvicorn does; CALLS_GRACE_S later, wake the calls still waiting (a hang lasts minutes)."""
        if self.on_stop is not None:
            asyncio.get_running_loop().call_later(CALLS_GRACE_S, self.on_stop)
        await super().shutdown(sockets)
