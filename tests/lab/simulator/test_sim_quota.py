"""The chat quota: sliding window, 429 with Retry-After, headers on every chat answer, admin switch."""

import concurrent.futures
import time

import pytest

from simulator.admin import admin_allowed, is_loopback
from simulator.quota import ChatQuota, format_duration
from tests.lab.simulator.sim_testing import chat_body

QUOTA = 5
RATE_HEADERS = ("x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests")


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_window_slides_per_key():
    clock = FakeClock()
    quota = ChatQuota(3, window_s=60, clock=clock)
    for second in range(3):
        clock.now = 1000.0 + second
        assert quota.admit("key-a").allowed
    clock.now = 1010.0
    refused = quota.admit("key-a")
    assert not refused.allowed
    assert refused.remaining == 0
    assert refused.retry_after_s == pytest.approx(50.0)  # the first call leaves the window at 1060
    assert quota.admit("key-b").allowed  # another key has its own window
    clock.now = 1060.0
    assert quota.admit("key-a").allowed  # one slot freed, exactly one
    assert not quota.admit("key-a").allowed
    quota.reset()
    assert quota.admit("key-a").remaining == 2


def test_peek_counts_nothing_and_zero_switches_the_quota_off():
    quota = ChatQuota(2, clock=FakeClock())
    assert quota.peek("k").remaining == 2
    assert quota.admit("k").remaining == 1
    assert ChatQuota(0).admit("k") is None


def test_durations_are_written_like_openai():
    assert format_duration(0) == "0s"
    assert format_duration(1.5) == "1.5s"
    assert format_duration(59.99949) == "59.999s"


@pytest.fixture(scope="module")
def quota_sim(server_factory):
    """A simulator with a quota of 5 chat calls per minute."""
    return server_factory("--speed", "0.01", "--quota", str(QUOTA))


@pytest.fixture
def quota_client(quota_sim):
    """A client of quota_sim, with a fresh window and the quota back at 5."""
    with quota_sim.client() as client:
        assert client.put("/admin/quota", json={"requests_per_minute": QUOTA}).status_code == 200
        assert client.post("/admin/quota/reset").status_code == 200
        yield client


def chat(client, key: str = "key-a", **headers):
    """One chat call with the given API key."""
    return client.post(
        "/v1/chat/completions", json=chat_body("classify"), headers={"Authorization": f"Bearer {key}", **headers}
    )


def test_the_sixth_chat_call_in_a_minute_gets_429_with_retry_after(quota_client):
    answers = [chat(quota_client) for _ in range(QUOTA)]
    assert [answer.status_code for answer in answers] == [200] * QUOTA
    assert [int(answer.headers["x-ratelimit-remaining-requests"]) for answer in answers] == [4, 3, 2, 1, 0]
    refused = chat(quota_client)
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert set(refused.json()["error"]) == {"message", "type", "param", "code"}
    for answer in [*answers, refused]:
        assert answer.headers["x-ratelimit-limit-requests"] == str(QUOTA)
        assert all(name in answer.headers for name in RATE_HEADERS)
    assert chat(quota_client, key="key-b").status_code == 200


def test_streamed_and_refused_answers_carry_the_headers_too(quota_client):
    with quota_client.stream("POST", "/v1/chat/completions", json=chat_body("draft", stream=True)) as streamed:
        streamed.read()
    assert streamed.status_code == 200
    assert all(name in streamed.headers for name in RATE_HEADERS)
    forced = chat(quota_client, **{"X-Sim-Fault": "error"})
    assert forced.status_code == 500
    assert all(name in forced.headers for name in RATE_HEADERS)


def test_embeddings_do_not_count(quota_client):
    for _ in range(QUOTA + 3):
        answer = quota_client.post(
            "/v1/embeddings", json={"model": "e", "input": "hi"}, headers={"Authorization": "Bearer key-a"}
        )
        assert answer.status_code == 200
        assert "x-ratelimit-limit-requests" not in answer.headers
    assert chat(quota_client).headers["x-ratelimit-remaining-requests"] == str(QUOTA - 1)


def test_the_admin_endpoint_changes_and_resets_the_quota_at_run_time(quota_client):
    for _ in range(QUOTA):
        chat(quota_client)
    assert chat(quota_client).status_code == 429
    assert quota_client.post("/admin/quota/reset").json()["requests_per_minute"] == QUOTA
    assert chat(quota_client).status_code == 200
    switched_off = quota_client.put("/admin/quota", json={"requests_per_minute": 0})
    assert switched_off.json() == {"requests_per_minute": 0, "enabled": False, "window_s": 60.0}
    for _ in range(QUOTA + 2):
        answer = chat(quota_client)
        assert answer.status_code == 200
        assert "x-ratelimit-limit-requests" not in answer.headers
    assert quota_client.get("/admin/quota").json()["enabled"] is False


@pytest.mark.parametrize("value", [-1, "10", 2.5, True, None])
def test_the_admin_endpoint_refuses_a_bad_quota(quota_client, value):
    answer = quota_client.put("/admin/quota", json={"requests_per_minute": value})
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "requests_per_minute"


def test_a_client_behind_a_local_proxy_needs_the_admin_token(server_factory):
    """X-Forwarded-For from loopback stands for a remote client: refused unless it brings the token."""
    sim = server_factory("--speed", "0.01", "--admin-token", "s3cret")
    assert "s3cret" not in sim.first_line
    remote = {"X-Forwarded-For": "203.0.113.9"}
    with sim.client() as client:
        refused = client.get("/admin/quota", headers=remote)
        assert refused.status_code == 403
        assert refused.json()["error"]["type"] == "permission_error"
        assert client.get("/admin/quota", headers={**remote, "Authorization": "Bearer wrong"}).status_code == 403
        allowed = client.put(
            "/admin/quota", json={"requests_per_minute": 7}, headers={**remote, "Authorization": "Bearer s3cret"}
        )
        assert allowed.status_code == 200
        assert client.get("/admin/quota").json()["requests_per_minute"] == 7  # loopback needs no token


@pytest.mark.parametrize(
    ("host", "token", "configured", "allowed"),
    [
        ("127.0.0.1", "", None, True),
        ("127.8.9.10", "", None, True),
        ("::1", "", None, True),
        ("::ffff:127.0.0.1", "", None, True),
        ("10.0.0.5", "", None, False),
        ("10.0.0.5", "", "", False),
        ("10.0.0.5", "anything", None, False),
        ("10.0.0.5", "wrong", "right", False),
        ("10.0.0.5", "right", "right", True),
        (None, "", "right", False),
        ("not-an-address", "", None, False),
    ],
)
def test_the_admin_decision(host, token, configured, allowed):
    assert admin_allowed(host, token, configured) is allowed


def test_loopback_means_the_loopback_range_only():
    assert is_loopback("127.0.0.1") and not is_loopback("192.168.1.1") and not is_loopback("")


def test_lowest_remaining_is_the_most_used_keys_share():
    clock = FakeClock()
    quota = ChatQuota(3, window_s=60, clock=clock)
    assert quota.lowest_remaining() == 3  # nobody has called yet
    quota.admit("key-a")
    quota.admit("key-a")
    quota.admit("key-b")
    assert quota.lowest_remaining() == 1
    clock.now += 60
    assert quota.lowest_remaining() == 3  # the calls left the window
    assert ChatQuota(0).lowest_remaining() is None


def test_the_stats_endpoint_shows_calls_in_flight_and_the_quota_left(server_factory):
    sim = server_factory("--speed", "0.01", "--quota", "4", "--hang-s", "3")
    with sim.client() as client, concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert client.get("/admin/stats").json() == {"in_flight": 0, "quota_limit": 4, "quota_remaining": 4}
        with sim.client() as other:
            hanging = pool.submit(chat, other, **{"X-Sim-Fault": "hang"})
            deadline = time.monotonic() + 2  # the hanging call lasts 3 s
            while client.get("/admin/stats").json()["in_flight"] == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert client.get("/admin/stats").json()["in_flight"] == 1
            assert hanging.result().status_code == 200
        chat(client)
        assert client.get("/admin/stats").json() == {"in_flight": 0, "quota_limit": 4, "quota_remaining": 2}
        assert client.get("/admin/stats", headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 403
