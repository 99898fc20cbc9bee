"""The bench's yardstick, `python -m simulator.reference`: it sleeps the simulator's delays and nothing else."""

import time

from tests.lab.simulator.sim_testing import chat_body

EMBED_BODY = {"model": "text-embedding-3-small", "input": "Refund for a double charge", "dimensions": 256}
CALLS = [
    ("/v1/chat/completions", chat_body("classify")),
    ("/v1/chat/completions", chat_body("draft")),
    ("/v1/embeddings", EMBED_BODY),
    ("/v1/chat/completions", chat_body("classify")),
]


def test_the_reference_sleeps_the_delays_the_simulator_replays(server_factory):
    """Same recording, same seed: each call waits the recorded latency the simulator would replay for it."""
    reference = server_factory(module="simulator.reference")
    simulator = server_factory("--speed", "0", "--quota", "0")
    with reference.client() as slept, simulator.client() as replayed:
        assert slept.get("/health").json() == {"status": "ok"}
        for path, body in CALLS:
            started = time.perf_counter()
            answer = slept.post(path, json=body)
            waited_ms = (time.perf_counter() - started) * 1000
            delay_ms = float(answer.headers["x-sim-delay-ms"])
            assert answer.status_code == 200
            assert waited_ms >= delay_ms - 1
            assert f"{delay_ms:.1f}" == replayed.post(path, json=body).headers["x-sim-replayed-ms"]
    assert reference.stop() == 0
