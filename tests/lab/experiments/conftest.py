"""Fixtures of the experiment tests: a fake AI provider in a thread, the experiment app, and a real process of it."""

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from fastapi import FastAPI, Response
from fastapi.testclient import TestClient

from scripts.experiments.app import create_app
from scripts.experiments.runner import experiment_app
from scripts.experiments.settings import ExperimentSettings
from scripts.toolkit import cli
from scripts.toolkit.running import apis
from tests.servers import serve

UPSTREAM_DELAY_S = 0.25  # long enough that a blocked loop shows above the noise of 2 busy cores


def fake_provider_app(delay_s: float) -> FastAPI:
    """Answers POST /v1/embeddings after `delay_s`, and /failing/v1/embeddings with 500."""
    app = FastAPI()

    @app.post("/v1/embeddings")
    async def embeddings() -> dict:
        await asyncio.sleep(delay_s)
        return {"object": "list", "data": []}

    @app.post("/failing/v1/embeddings")
    async def failing() -> Response:
        return Response(status_code=500)

    return app


@pytest.fixture(scope="session")
def upstream() -> Iterator[SimpleNamespace]:
    """The fake provider on a real server in a thread: `url` (…/v1) and `delay_s`."""
    with serve(fake_provider_app(UPSTREAM_DELAY_S)) as url:
        yield SimpleNamespace(url=f"{url}/v1", delay_s=UPSTREAM_DELAY_S)


@pytest.fixture
def client() -> Iterator[TestClient]:
    """The experiment app in this process (lifespan included), with its default settings."""
    with TestClient(create_app(ExperimentSettings())) as test_client:
        yield test_client


@pytest.fixture(scope="session")
def running_app(upstream: SimpleNamespace) -> Iterator[str]:
    """The experiment app in a process of its own (THREAD_LIMIT=4), in front of the fake provider; yields its URL."""
    with apis.started(experiment_app(ExperimentSettings(upstream.url, thread_limit=4))) as app:
        yield app.url


@pytest.fixture
def run_command():
    """Run `python -m scripts.<module> ARGS` from the project folder, as a student would."""

    def run(module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", f"scripts.{module}", *args]
        return subprocess.run(
            command,
            cwd=cli.PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=180,
            env={**os.environ, **(env or {})},
        )

    return run
