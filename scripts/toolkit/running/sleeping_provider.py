"""A provider that only sleeps: the yardstick of scripts.simulator_bench, under uvicorn as the simulator runs.

It answers each AI call after the delay the simulator would replay for it (the bundled recording,
seed 0, sample mode, speed 1; the `x-sim-delay-ms` header says it) and does nothing else: a raw
ASGI app with no checks and no answer text, served by uvicorn on the loop and HTTP parser it
would pick for the simulator, with the simulator's garbage-collector settings. What the bench
measures against it is the load generator's, the server's and the event loop's own cost; the
simulator's share is its figure minus this one.
"""

import asyncio
import gc
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from scripts.toolkit.processes import free_port
from scripts.toolkit.running.apis import uvicorn_command
from scripts.toolkit.services import Service
from simulator.replay import Replay, load_recording
from simulator.server import BACKLOG, GC_THRESHOLD, KEEP_ALIVE_S
from simulator.settings import Settings

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
HEALTH = orjson.dumps({"status": "ok"})


def service() -> Service:
    """The app under uvicorn on a free port: on the loop and HTTP parser uvicorn picks, as simulator/server.py does,
    with its backlog and keep-alive."""
    port = free_port()
    options = ["--factory", "--lifespan", "off", "--http", "auto", "--no-server-header"]
    options += ["--backlog", str(BACKLOG), "--timeout-keep-alive", str(KEEP_ALIVE_S)]
    return Service("reference", uvicorn_command(f"{__name__}:create_app", port, 1, "auto", *options), port)


def create_app() -> Callable[[dict, Receive, Send], Awaitable[None]]:
    """The sleeping app; the garbage collector set as the simulator's server sets it (simulator/server.py)."""
    defaults = Settings()
    replay = Replay(load_recording(defaults.recording), defaults.mode, defaults.seed)
    gc.freeze()
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])

    async def app(scope: dict, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(b"content-type", b"application/json")]
        if scope["path"] == "/health":
            answer = HEALTH
        else:
            operation = "embed" if scope["path"].endswith("/embeddings") else "draft"
            if operation == "draft":
                operation = orjson.loads(body).get("metadata", {}).get("operation", "draft")
            delay_s = replay.next_call(operation).latency_ms / 1000
            await asyncio.sleep(delay_s)
            headers.append((b"x-sim-delay-ms", f"{delay_s * 1000:.3f}".encode()))
            answer = b"{}"
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    return app
