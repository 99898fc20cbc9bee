"""scripts.simulator_bench's yardstick, toolkit.running.sleeping_provider: it sleeps the simulator's delays and
nothing else; and the bench's own command line."""

import time

import httpx
import pytest

from scripts.toolkit import services
from scripts.toolkit.running import sleeping_provider
from tests.lab.simulator.sim_testing import chat_body
from tests.lab.tools.commands import run_module

EMBED_BODY = {"model": "text-embedding-3-small", "input": "Refund for a double charge", "dimensions": 256}
CALLS = [
    ("/v1/chat/completions", chat_body("classify")),
    ("/v1/chat/completions", chat_body("draft")),
    ("/v1/embeddings", EMBED_BODY),
    ("/v1/chat/completions", chat_body("classify")),
]


@pytest.mark.timing
def test_the_reference_sleeps_the_delays_the_simulator_replays():
    """Same recording, same seed: each call waits the recorded latency the simulator would replay for it."""
    with sleeping_provider.service() as sleeper, services.simulator(speed=0) as simulator:
        with httpx.Client(base_url=sleeper.url) as slept, httpx.Client(base_url=simulator.url) as replayed:
            assert slept.get("/health").json() == {"status": "ok"}
            for path, body in CALLS:
                started = time.perf_counter()
                answer = slept.post(path, json=body)
                waited_ms = (time.perf_counter() - started) * 1000
                delay_ms = float(answer.headers["x-sim-delay-ms"])
                assert answer.status_code == 200
                assert waited_ms >= delay_ms - 1
                assert f"{delay_ms:.1f}" == replayed.post(path, json=body).headers["x-sim-replayed-ms"]
        assert sleeper.stop() != -9  # it stopped at SIGTERM (uvicorn raises it again once done), not killed


def test_the_bench_has_help_and_one_line_usage_errors():
    assert run_module("scripts.simulator_bench", "--help").returncode == 0
    result = run_module("scripts.simulator_bench", "--duration", "-1")
    assert result.returncode == 2 and "--duration" in result.stderr.strip().splitlines()[-1]
