"""The provider client: answers, timing, and every failure mapped to one of the lab's errors."""

import json

import httpx
import pytest

from scripts.toolkit.processes import free_port
from ticket_api.config import load_settings
from ticket_api.errors import ProviderBusy, ProviderTimeout, ProviderUnavailable
from ticket_api.provider import Provider

ANSWER = {"object": "chat.completion", "choices": [{"message": {"content": "hi"}}]}


def provider_answering(handler, **settings) -> Provider:
    """A Provider whose HTTP goes to `handler` (httpx.MockTransport) instead of the network."""
    values = {"provider_api_key": "sk-test-key", **settings}
    return Provider(load_settings(_env_file=None, **values), transport=httpx.MockTransport(handler))


def test_call_returns_the_answer_and_the_time_it_took():
    provider = provider_answering(lambda request: httpx.Response(200, json=ANSWER))
    answer, elapsed_ms = provider.call("/chat/completions", {"model": "m"})
    assert answer == ANSWER
    assert elapsed_ms > 0


def test_call_posts_json_with_the_api_key_to_the_provider_url():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=ANSWER)

    provider_answering(handler, provider_url="http://127.0.0.1:8100/v1").call("/embeddings", {"input": "x"})
    request = seen[0]
    assert str(request.url) == "http://127.0.0.1:8100/v1/embeddings"
    assert request.headers["Authorization"] == "Bearer sk-test-key"
    assert request.headers["Content-Type"] == "application/json"
    assert json.loads(request.content) == {"input": "x"}


def test_a_spent_quota_is_provider_busy_with_its_retry_after():
    provider = provider_answering(lambda request: httpx.Response(429, headers={"Retry-After": "17"}, json={}))
    with pytest.raises(ProviderBusy) as caught:
        provider.call("/chat/completions", {})
    assert caught.value.retry_after == 17


@pytest.mark.parametrize("status", [400, 500, 502, 503])
def test_an_error_status_is_provider_unavailable(status):
    provider = provider_answering(lambda request: httpx.Response(status, json={"error": {"message": "no"}}))
    with pytest.raises(ProviderUnavailable):
        provider.call("/chat/completions", {})


def test_an_answer_that_is_not_json_is_provider_unavailable():
    provider = provider_answering(lambda request: httpx.Response(200, content=b"<html>"))
    with pytest.raises(ProviderUnavailable):
        provider.call("/chat/completions", {})


def test_a_slow_provider_is_provider_timeout():
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("too slow", request=request)

    with pytest.raises(ProviderTimeout):
        provider_answering(handler).call("/chat/completions", {})


def test_a_provider_that_is_not_running_is_provider_unavailable():
    settings = load_settings(_env_file=None, provider_url=f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(ProviderUnavailable):
        Provider(settings).call("/chat/completions", {})


def test_calls_in_flight_return_to_zero_after_answers_and_failures():
    statuses = iter([200, 500])
    provider = provider_answering(lambda request: httpx.Response(next(statuses), json=ANSWER))
    provider.call("/chat/completions", {})
    with pytest.raises(ProviderUnavailable):
        provider.call("/chat/completions", {})
    assert provider.in_flight == 0


def test_errors_never_show_the_api_key():
    provider = provider_answering(lambda request: httpx.Response(503, json={}), provider_api_key="sk-secret-123")
    with pytest.raises(ProviderUnavailable) as caught:
        provider.call("/chat/completions", {})
    assert "sk-secret-123" not in str(caught.value)
