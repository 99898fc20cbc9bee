"""`python -m simulator.reference`: a server that only sleeps, the yardstick of simulator.bench.

It answers each AI call after the delay the simulator would replay for it (the bundled recording,
seed 0, sample mode, speed 1) and does nothing else: no framework, no checks, no answer text, just
enough HTTP/1.1 for simulator.loadgen on a bare asyncio protocol, on the loop uvicorn would pick.
What the bench measures against it is the load generator's and the event loop's own cost; the
simulator's share is its figure minus this one.
"""

import asyncio
import signal
import sys

import orjson

from simulator import cli, server
from simulator.loadgen import run_loop
from simulator.replay import Replay, load_recording
from simulator.settings import Settings

HEALTH_ANSWER = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 16\r\n\r\n{"status": "ok"}'
CALL_ANSWER = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nx-sim-delay-ms: %.3f\r\n\r\n{}"
)


class SleepingProtocol(asyncio.Protocol):
    """One keep-alive connection: each complete request is answered after its recorded delay."""

    transport: asyncio.Transport  # set by connection_made, which asyncio calls before anything else

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.buffer = b""

    def connection_made(self, transport) -> None:
        """Keep the transport to answer on."""
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        """Answer every complete request in the buffer (head, then a Content-Length body)."""
        self.buffer += data
        while (head_end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:head_end].lower()
            lengths = [int(line[15:]) for line in head.split(b"\r\n") if line.startswith(b"content-length:")]
            end = head_end + 4 + sum(lengths)
            if len(self.buffer) < end:
                return
            body, self.buffer = self.buffer[head_end + 4 : end], self.buffer[end:]
            self.answer(head, body)

    def answer(self, head: bytes, body: bytes) -> None:
        """/health at once; an AI call after the recorded latency of its operation."""
        if head.startswith(b"get /health "):
            self.transport.write(HEALTH_ANSWER)
            return
        if head.startswith(b"post /v1/embeddings "):
            operation = "embed"
        else:
            operation = orjson.loads(body).get("metadata", {}).get("operation", "draft")
        delay_s = self.replay.next_call(operation).latency_ms / 1000
        asyncio.get_running_loop().call_later(delay_s, self.send, CALL_ANSWER % (delay_s * 1000))

    def send(self, answer: bytes) -> None:
        """Write an answer unless the client has gone."""
        if not self.transport.is_closing():
            self.transport.write(answer)


async def serve(host: str, port: int) -> None:
    """Listen, print the start-up line (it names the port) and answer until stopped."""
    defaults = Settings()
    replay = Replay(load_recording(defaults.recording), defaults.mode, defaults.seed)
    sock = server.bind_socket(host, port)
    listener = await asyncio.get_running_loop().create_server(lambda: SleepingProtocol(replay), sock=sock)
    print(f"reference: serving http://{host}:{server.bound_port(sock)}/v1 (sleeps only)", flush=True)
    async with listener:
        await listener.serve_forever()


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGINT or SIGTERM."""
    parser = cli.OneLineParser(prog="python -m simulator.reference", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=cli.port_number, default=0, help="port (default 0: a free one, printed)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a stop by pid ends like Ctrl+C
    try:
        run_loop(serve(args.host, args.port))
    except OSError as error:
        cli.fail(parser.prog, f"cannot listen on {args.host}:{args.port}: {error.strerror or error}")
    except KeyboardInterrupt:
        pass
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
