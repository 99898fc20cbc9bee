"""The AI work: the three requests, and reading the provider's answers."""

import json

import pytest

from tests.fakes import FakeProvider
from ticket_api.ai import (
    CATEGORIES,
    PRIORITIES,
    classify_request,
    do_ai_work,
    draft_request,
    embed_request,
    read_answers,
)
from ticket_api.errors import ProviderUnavailable
from ticket_api.instruments.requestlog import Timer

CLASSIFIED = {
    "model": "gpt-4o-mini",
    "choices": [{"message": {"content": json.dumps({"category": "billing", "priority": "high"})}}],
}
DRAFTED = {"model": "gpt-4o-mini", "choices": [{"message": {"content": " Hello, we refund you. "}}]}
EMBEDDED = {"model": "text-embedding-3-small", "data": [{"embedding": [0.0625] * 256}]}


def test_classify_asks_for_json_within_the_allowed_values():
    request = classify_request("Refund", "Please refund me")
    schema = request["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["category"]["enum"] == list(CATEGORIES)
    assert schema["properties"]["priority"]["enum"] == list(PRIORITIES)
    assert request["metadata"] == {"operation": "classify"}


def test_draft_shows_the_subject_and_body_to_the_model():
    request = draft_request("Parcel lost", "Where is it?")
    assert request["messages"][-1]["content"] == "Subject: Parcel lost\n\nWhere is it?"
    assert request["metadata"] == {"operation": "draft"}


def test_embed_asks_for_256_dimensions_of_subject_and_body():
    request = embed_request("Parcel lost", "Where is it?")
    assert request["dimensions"] == 256
    assert "Parcel lost" in request["input"] and "Where is it?" in request["input"]


def test_good_answers_become_ai_work():
    work = read_answers(CLASSIFIED, DRAFTED, EMBEDDED, (900.0, 1100.0, 200.0))
    assert (work.category, work.priority) == ("billing", "high")
    assert work.draft_reply == "Hello, we refund you."
    assert len(work.embedding) == 256
    assert work.models == {"classify": "gpt-4o-mini", "draft": "gpt-4o-mini", "embed": "text-embedding-3-small"}
    assert work.elapsed_ms == {"classify": 900.0, "draft": 1100.0, "embed": 200.0}


@pytest.mark.parametrize(
    "classified",
    [
        {},
        {"choices": []},
        {"choices": [{"message": {"content": "not json"}}]},
        {"choices": [{"message": {"content": json.dumps({"category": "billing"})}}]},
        {"choices": [{"message": {"content": json.dumps({"category": "gossip", "priority": "high"})}}]},
        {"choices": [{"message": {"content": json.dumps(["billing", "high"])}}]},
    ],
)
def test_an_unusable_classification_is_the_providers_fault(classified):
    with pytest.raises(ProviderUnavailable):
        read_answers(classified, DRAFTED, EMBEDDED, (1.0, 1.0, 1.0))


def test_an_embedding_of_the_wrong_size_is_the_providers_fault():
    with pytest.raises(ProviderUnavailable):
        read_answers(CLASSIFIED, DRAFTED, {"data": [{"embedding": [0.1] * 3}]}, (1.0, 1.0, 1.0))


def test_do_ai_work_calls_classify_draft_embed_in_order_and_times_them_as_ai():
    provider, timer = FakeProvider(0.02), Timer()
    work = do_ai_work(provider, "Parcel lost", "Where is it?", timer)
    assert provider.calls == ["/chat/completions", "/chat/completions", "/embeddings"]
    assert timer.spent_ms["ai"] >= 60
    assert "Parcel lost" in work.draft_reply
