"""Helpers for the simulator tests: real servers as subprocesses, small recordings, request bodies."""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from scripts.toolkit.processes import start_process, stop_process

PROJECT_ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 20


class RunningServer:
    """A server started by `python -m ...` that printed its URL on its first line."""

    def __init__(self, process: subprocess.Popen, first_line: str, stderr_path: Path) -> None:
        self.process = process
        self.first_line = first_line
        self.stderr_path = stderr_path
        address = first_line.split("http://", 1)[1].split("/", 1)[0]
        self.port = int(address.rsplit(":", 1)[1])
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.api_url = self.base_url + "/v1"

    def client(self, **options) -> httpx.Client:
        """An httpx client for this server (close it, or use it in a with block)."""
        return httpx.Client(base_url=self.base_url, timeout=options.pop("timeout", 30), **options)

    def stop(self) -> int:
        """Stop the process by its own pid (SIGTERM, then SIGKILL after 10 s); return its exit code."""
        stop_process(self.process, 10)
        self.process.stdout.close()
        return self.process.returncode


def start_server(module: str, *flags: str, stderr_path: Path, env: dict | None = None) -> RunningServer:
    """Start `python -m module --port 0 ...` from the project root and wait for its start-up line."""
    environment = {**os.environ, **(env or {})}
    with stderr_path.open("w") as stderr:
        argv = [sys.executable, "-m", module, "--port", "0", *flags]
        process = start_process(argv, env=environment, stdout=subprocess.PIPE, stderr=stderr, text=True)
    line = process.stdout.readline()
    if "http://" not in line:
        stop_process(process, graceful=False)
        raise RuntimeError(f"{module} did not start: {stderr_path.read_text()}")
    return RunningServer(process, line, stderr_path)


def write_recording(path: Path, calls: list[dict]) -> Path:
    """Write a small recording (a meta line plus the calls) and return its path."""
    lines = [{"kind": "meta", "source": "test"}, *calls]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def recorded_call(operation: str, latency_ms: float, ttft_ms: float | None = None, completion_tokens: int = 10) -> dict:
    """One call line for write_recording."""
    line = {
        "operation": operation,
        "endpoint": "embeddings" if operation == "embed" else "chat",
        "model": "test-model",
        "latency_ms": latency_ms,
        "prompt_tokens": 5,
        "completion_tokens": 0 if operation == "embed" else completion_tokens,
    }
    if ttft_ms is not None:
        line["ttft_ms"] = ttft_ms
    return line


def chat_body(operation: str | None = "draft", text: str = "Subject: Printer on fire\n\nIt smokes.", **extra) -> dict:
    """A minimal chat completion body, marked with an operation unless None."""
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}], **extra}
    if operation is not None:
        body["metadata"] = {"operation": operation}
    return body


def post_many(
    base_url: str, path: str, bodies: list[dict], concurrency: int = 16, headers: dict | None = None
) -> list[httpx.Response]:
    """POST every body, `concurrency` at a time, over one async client; the responses in order."""

    async def post_all() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(base_url=base_url, timeout=30, limits=limits) as client:
            slots = asyncio.Semaphore(concurrency)

            async def post(body: dict) -> httpx.Response:
                async with slots:
                    return await client.post(path, json=body, headers=headers)

            return await asyncio.gather(*(post(body) for body in bodies))

    return asyncio.run(post_all())
