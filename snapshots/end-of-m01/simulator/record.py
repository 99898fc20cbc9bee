"""`python -m simulator.record --out FILE`: a recording proxy in front of a real provider.

It forwards each chat and embeddings call to an OpenAI-compatible provider (SIM_UPSTREAM_URL,
with SIM_UPSTREAM_API_KEY or OPENAI_API_KEY), answers the client with the real response,
streaming included, and appends the call's latency and token counts to FILE, ready for
`python -m simulator --recording FILE`. Only successful (200) calls are recorded.
"""

import datetime
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import orjson

from simulator import cli, server
from simulator.asgi import Request, send_error, send_json
from simulator.content import estimate_tokens
from simulator.errors import ApiError, UnknownUrl, UpstreamFailed
from simulator.validate import chat_operation, parse_json_object

UPSTREAM_TIMEOUT_S = 600.0
# Response headers that describe the upstream connection, not the answer: never passed on.
HOP_HEADERS = {"connection", "content-length", "content-encoding", "transfer-encoding", "keep-alive", "date", "server"}


class Recorder:
    """Appends one line per recorded call to a JSON Lines file, starting it with a meta line."""

    def __init__(self, path: Path, upstream_url: str) -> None:
        is_new = not path.exists() or path.stat().st_size == 0
        self._file = path.open("a", encoding="utf-8")
        if is_new:
            self.append(
                {
                    "kind": "meta",
                    "source": "recorded",
                    "upstream": public_url(upstream_url),
                    "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                }
            )

    def append(self, line: dict) -> None:
        """Write one line and flush it, so a stopped proxy loses nothing."""
        self._file.write(orjson.dumps(line).decode() + "\n")
        self._file.flush()


class RecordingProxy:
    """The raw ASGI app of the proxy."""

    def __init__(self, upstream_url: str, api_key: str | None, recorder: Recorder) -> None:
        self.upstream_url = upstream_url.rstrip("/")
        self.api_key = api_key
        self.recorder = recorder
        self.client = httpx.AsyncClient(timeout=UPSTREAM_TIMEOUT_S)

    async def __call__(self, scope: dict, receive, send) -> None:
        """Forward one request; record it if it is a chat or embeddings call."""
        if scope["type"] != "http":
            return
        request = Request(scope, receive, send)
        try:
            if request.path == "/health" and request.method == "GET":
                await send_json(send, 200, {"status": "ok"})
            elif request.method == "POST" and request.path in ("/v1/chat/completions", "/v1/embeddings"):
                await self.forward_call(request)
            elif request.method == "GET" and request.path == "/v1/models":
                await self.forward_plain(request)
            else:
                raise UnknownUrl(f"Unknown request URL: {request.method} {request.path}.")
        except ApiError as error:
            await send_error(send, error)
        except httpx.HTTPError as error:
            await send_error(send, UpstreamFailed(f"The upstream provider failed: {type(error).__name__}."))

    def upstream_headers(self, request: Request) -> dict:
        """Headers for the upstream call: our key if we have one, else the client's own; X-Sim-* passed on."""
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        elif b"authorization" in request.headers:
            headers["authorization"] = request.headers[b"authorization"]
        for name in (b"x-sim-operation", b"x-sim-fault"):  # a real provider ignores them; a simulator needs them
            if name in request.headers:
                headers[name.decode()] = request.headers[name]
        return headers

    async def forward_plain(self, request: Request) -> None:
        """Forward a GET without recording it."""
        response = await self.client.get(
            self.upstream_url + request.path[len("/v1") :], headers=self.upstream_headers(request)
        )
        await send_answer(request, response.status_code, response.content, passed_headers(response))

    async def forward_call(self, request: Request) -> None:
        """Forward a chat or embeddings call, answer with the real response, record its timing."""
        raw_body = await request.body()
        body = parse_json_object(raw_body)
        is_chat = request.path.endswith("/chat/completions")
        operation = chat_operation(body, request.headers.get(b"x-sim-operation")) if is_chat else "embed"
        url = self.upstream_url + request.path[len("/v1") :]
        line = {
            "operation": operation,
            "endpoint": "chat" if is_chat else "embeddings",
            "model": body.get("model") if isinstance(body.get("model"), str) else "unknown",
        }
        started = time.perf_counter()
        # The body goes on unchanged: providers ignore metadata.operation, and a simulator upstream needs it.
        upstream = self.client.build_request("POST", url, content=raw_body, headers=self.upstream_headers(request))
        response = await self.client.send(upstream, stream=True)
        try:
            if body.get("stream") is True and response.status_code == 200:
                timing = await relay_stream(request, response, started)
            else:
                content = await response.aread()
                timing = {"latency_ms": elapsed_ms(started), **token_counts(answer_usage(content))}
                await send_answer(request, response.status_code, content, passed_headers(response))
        finally:
            await response.aclose()
        if response.status_code == 200:
            self.recorder.append({**line, **timing})


async def relay_stream(request: Request, response: httpx.Response, started: float) -> dict:
    """Pass server-sent events on as they come; return latency, time to first token and tokens."""
    await request.send({"type": "http.response.start", "status": 200, "headers": passed_headers(response)})
    ttft_ms = None
    text_chars = 0
    usage = None
    pending = b""
    async for chunk in response.aiter_raw():
        await request.send({"type": "http.response.body", "body": chunk, "more_body": True})
        pending += chunk
        *events, pending = pending.split(b"\n\n")
        for event in events:
            try:
                data = orjson.loads(event.removeprefix(b"data: "))
            except orjson.JSONDecodeError:
                continue  # [DONE], comments, keep-alives
            if not isinstance(data, dict):
                continue
            for choice in data.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece and ttft_ms is None:
                    ttft_ms = elapsed_ms(started)
                text_chars += len(piece)
            usage = data.get("usage") or usage
    await request.send({"type": "http.response.body", "body": b"", "more_body": False})
    latency_ms = elapsed_ms(started)
    # Without stream_options.include_usage there is no usage chunk: estimate from the text.
    if usage:
        counts = token_counts(usage)
    else:
        counts = {"prompt_tokens": 0, "completion_tokens": estimate_tokens("x" * text_chars)}
    return {"latency_ms": latency_ms, "ttft_ms": min(ttft_ms or latency_ms, latency_ms), **counts}


def answer_usage(content: bytes) -> dict:
    """The `usage` object of a JSON answer, or {} if it has none."""
    try:
        answer = orjson.loads(content)
    except orjson.JSONDecodeError:
        return {}
    usage = answer.get("usage") if isinstance(answer, dict) else None
    return usage if isinstance(usage, dict) else {}


def token_counts(usage: dict) -> dict:
    """prompt_tokens and completion_tokens of a usage object, 0 where missing (embeddings have no completion)."""
    return {
        name: value if isinstance(value := usage.get(name), int) and value >= 0 else 0
        for name in ("prompt_tokens", "completion_tokens")
    }


def public_url(url: str) -> str:
    """The URL without any user:password part, safe to print and to store."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"


async def send_answer(request: Request, status: int, body: bytes, headers: list) -> None:
    """Send the upstream's complete answer with its own headers."""
    await request.send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await request.send({"type": "http.response.body", "body": body})


def passed_headers(response: httpx.Response) -> list:
    """The upstream's response headers the client should see (rate limits, content type, ...)."""
    return [
        (name.encode(), value.encode()) for name, value in response.headers.items() if name.lower() not in HOP_HEADERS
    ]


def elapsed_ms(started: float) -> float:
    """Milliseconds since `started`, rounded to 0.1 ms."""
    return round((time.perf_counter() - started) * 1000, 1)


def main(argv: list[str] | None = None) -> int:
    """Start the recording proxy."""
    parser = cli.OneLineParser(
        prog="python -m simulator.record",
        description=__doc__.splitlines()[0],
        epilog="Environment: SIM_UPSTREAM_URL (required, e.g. https://api.openai.com/v1), "
        "SIM_UPSTREAM_API_KEY or OPENAI_API_KEY (never printed).",
    )
    parser.add_argument("--out", type=Path, required=True, help="JSON Lines file to append the recorded calls to")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=cli.port_number, default=8100, help="port to listen on (default 8100; 0: any free)"
    )
    parser.add_argument("--log-level", default="warning", choices=("critical", "error", "warning", "info", "debug"))
    args = parser.parse_args(argv)
    upstream_url = os.environ.get("SIM_UPSTREAM_URL", "")
    if not upstream_url.startswith(("http://", "https://")):
        cli.fail(parser.prog, "set SIM_UPSTREAM_URL to the provider's base URL, e.g. https://api.openai.com/v1")
    api_key = os.environ.get("SIM_UPSTREAM_API_KEY") or os.environ.get("OPENAI_API_KEY")
    try:
        recorder = Recorder(args.out, upstream_url)
        sock = server.bind_socket(args.host, args.port)
    except OSError as error:
        cli.fail(parser.prog, f"{error.filename or f'{args.host}:{args.port}'}: {error.strerror or error}")
    key_source = "from the environment" if api_key else "the client's own"
    print(
        f"simulator.record: proxying http://{args.host}:{server.bound_port(sock)}/v1 -> {public_url(upstream_url)}"
        f" (key: {key_source}), appending to {args.out}",
        flush=True,
    )
    server.run(RecordingProxy(upstream_url, api_key, recorder), sock, args.log_level, access_log=False)
    print("simulator.record: stopped", flush=True)
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
