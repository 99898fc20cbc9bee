"""Faults: forced with X-Sim-Fault, seeded --error-rate and --hang-rate, --slowdown under load."""

import threading
import time

import httpx
import pytest

from simulator.faults import SLOW_FAULT_FACTOR, FaultPlan
from tests.lab.simulator.sim_testing import chat_body, post_many, recorded_call, write_recording

HANG_S = 0.6


@pytest.fixture(scope="module")
def fault_sim(server_factory):
    """A simulator with short hangs, so hang tests stay fast."""
    return server_factory("--speed", "0.01", "--quota", "0", "--hang-s", str(HANG_S))


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        ("error", 500, "simulated_error"),
        ("unavailable", 503, "simulated_unavailable"),
        ("rate_limit", 429, "rate_limit_exceeded"),
    ],
)
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/embeddings"])
def test_a_forced_fault_answers_with_its_openai_style_error(fault_sim, fault, status, code, path):
    body = chat_body("draft") if "chat" in path else {"model": "e", "input": "hi"}
    with fault_sim.client() as client:
        answer = client.post(path, json=body, headers={"X-Sim-Fault": fault})
    assert answer.status_code == status
    assert answer.json()["error"]["code"] == code
    if fault == "rate_limit":
        assert answer.headers["retry-after"] == "1"


@pytest.mark.timing
def test_a_forced_slow_call_waits_five_times_longer(fault_sim):
    with fault_sim.client() as client:
        answer = client.post("/v1/chat/completions", json=chat_body("draft"), headers={"X-Sim-Fault": "slow"})
    assert answer.status_code == 200
    assert answer.headers["x-sim-fault"] == "slow"
    expected_ms = float(answer.headers["x-sim-replayed-ms"]) * 0.01 * SLOW_FAULT_FACTOR
    assert float(answer.headers["x-sim-delay-ms"]) == pytest.approx(expected_ms, rel=0.01)


@pytest.mark.timing
def test_a_hanging_call_outlasts_a_client_timeout(fault_sim):
    with fault_sim.client(timeout=0.2) as client:
        started = time.perf_counter()
        with pytest.raises(httpx.ReadTimeout):
            client.post("/v1/chat/completions", json=chat_body("classify"), headers={"X-Sim-Fault": "hang"})
        assert time.perf_counter() - started < HANG_S
    with fault_sim.client() as patient:
        started = time.perf_counter()
        answer = patient.post("/v1/embeddings", json={"model": "e", "input": "hi"}, headers={"X-Sim-Fault": "hang"})
        assert time.perf_counter() - started >= HANG_S  # real time: --speed 0.01 does not shorten a hang
    assert answer.status_code == 200
    assert answer.headers["x-sim-fault"] == "hang"


def test_an_unknown_fault_name_is_a_bad_request(fault_sim):
    with fault_sim.client() as client:
        answer = client.post("/v1/chat/completions", json=chat_body("draft"), headers={"X-Sim-Fault": "explode"})
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "X-Sim-Fault"


def test_the_error_rate_fails_about_that_share_with_both_codes(server_factory):
    sim = server_factory("--speed", "0.01", "--quota", "0", "--error-rate", "0.3", "--seed", "5")
    statuses = [answer.status_code for answer in post_many(sim.base_url, "/v1/chat/completions", [chat_body()] * 200)]
    assert set(statuses) == {200, 500, 503}
    assert 0.2 <= (statuses.count(500) + statuses.count(503)) / len(statuses) <= 0.4


def test_random_faults_follow_the_seed_and_the_rates():
    first = FaultPlan(0.1, 0.2, 120, 0, seed=3)
    again = FaultPlan(0.1, 0.2, 120, 0, seed=3)
    draws = [first.pick(None) for _ in range(2000)]
    assert draws == [again.pick(None) for _ in range(2000)]
    assert 0.07 <= (draws.count("error") + draws.count("unavailable")) / 2000 <= 0.13
    assert 0.17 <= draws.count("hang") / 2000 <= 0.23
    assert FaultPlan(0, 0, 120, 0, seed=3).pick(None) is None
    assert FaultPlan(1, 0, 120, 0, seed=3).pick("slow") == "slow"  # a forced fault wins


@pytest.mark.timing
def test_the_slowdown_grows_with_calls_in_flight(server_factory, tmp_path):
    """With --slowdown 100, a lone call waits 2x its delay; with 20 in flight, up to 21x."""
    recording = write_recording(
        tmp_path / "flat.jsonl", [recorded_call(operation, 100.0) for operation in ("classify", "draft", "embed")]
    )
    # 50 ms a call before the slowdown: long enough that 20 calls from a busy machine's client are in flight together
    sim = server_factory("--recording", str(recording), "--speed", "0.5", "--quota", "0", "--slowdown", "100")
    with sim.client() as client:
        alone = float(client.post("/v1/chat/completions", json=chat_body()).headers["x-sim-delay-ms"])
    assert alone == pytest.approx(100 * 0.5 * 2)
    crowded = [
        float(answer.headers["x-sim-delay-ms"])
        for answer in post_many(sim.base_url, "/v1/chat/completions", [chat_body()] * 20, concurrency=20)
    ]
    assert max(crowded) >= 5 * alone


def test_a_caller_that_gives_up_stops_counting_as_in_flight_at_once(server_factory, tmp_path):
    """A hanging call slows the others (--slowdown) while its client waits, and no longer once it hangs up."""
    recording = write_recording(
        tmp_path / "flat.jsonl", [recorded_call(operation, 100.0) for operation in ("classify", "draft", "embed")]
    )
    sim = server_factory("--recording", str(recording), "--speed", "0.05", "--quota", "0", "--slowdown", "100")
    outcome = []

    def give_up() -> None:
        try:
            impatient.post("/v1/embeddings", json={"model": "e", "input": "hi"}, headers={"X-Sim-Fault": "hang"})
        except httpx.ReadTimeout:
            outcome.append("gave up")

    with sim.client(timeout=1.0) as impatient, sim.client() as client:
        hanging = threading.Thread(target=give_up)
        hanging.start()
        time.sleep(0.3)
        beside_it = float(client.post("/v1/chat/completions", json=chat_body()).headers["x-sim-delay-ms"])
        hanging.join()
        time.sleep(0.2)
        after_it = float(client.post("/v1/chat/completions", json=chat_body()).headers["x-sim-delay-ms"])
    assert outcome == ["gave up"]
    assert beside_it == pytest.approx(100 * 0.05 * 3)  # two calls in flight
    assert after_it == pytest.approx(100 * 0.05 * 2)  # only itself
