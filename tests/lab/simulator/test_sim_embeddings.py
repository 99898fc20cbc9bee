"""Embeddings: fixed dimension, unit length, equal texts equal, similar texts close, unrelated far."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.embeddings import embed_text
from simulator.validate import MAX_EMBEDDING_VALUES

BILLING = [
    "I was charged twice, please refund the duplicate payment",
    "Refund request: duplicate charge on my card",
    "My invoice shows a double charge, I need a refund",
]
UNRELATED = [
    "The mobile app crashes when I open the settings page",
    "My parcel has not arrived and the tracking page shows nothing",
    "How do I change the email address of my account",
]


def cosine(first: list[float], second: list[float]) -> float:
    """The cosine similarity of two vectors of the same length."""
    dot = sum(a * b for a, b in zip(first, second, strict=True))
    return dot / (math.sqrt(sum(a * a for a in first)) * math.sqrt(sum(b * b for b in second)))


@settings(max_examples=100, database=None, deadline=None)
@given(text=st.text(max_size=400), dimensions=st.sampled_from([1, 8, 256, 1536]))
def test_every_vector_has_the_asked_dimension_and_unit_length(text, dimensions):
    vector = embed_text(text, dimensions)
    assert len(vector) == dimensions
    assert math.fsum(value * value for value in vector) == pytest.approx(1.0)


def test_equal_texts_give_equal_vectors_and_the_default_is_1536():
    assert embed_text("Same words here") == embed_text("Same words here")
    assert len(embed_text("Same words here")) == 1536


def test_similar_texts_are_closer_than_unrelated_ones():
    for dimensions in (256, 1536):
        similar = [
            cosine(embed_text(a, dimensions), embed_text(b, dimensions)) for a in BILLING for b in BILLING if a < b
        ]
        unrelated = [cosine(embed_text(a, dimensions), embed_text(b, dimensions)) for a in BILLING for b in UNRELATED]
        assert min(similar) > 0.25
        assert max(unrelated) < 0.25
        assert min(similar) > max(unrelated)


def test_dimensions_out_of_range_are_refused():
    with pytest.raises(ValueError):
        embed_text("text", 0)


def test_the_endpoint_honours_dimensions_and_keeps_the_input_order(http):
    texts = ["first text", "second text", "third one"]
    answer = http.post("/v1/embeddings", json={"model": "text-embedding-3-small", "input": texts, "dimensions": 256})
    assert answer.status_code == 200
    body = answer.json()
    assert body["object"] == "list" and body["model"] == "text-embedding-3-small"
    assert [item["index"] for item in body["data"]] == [0, 1, 2]
    assert [item["embedding"] for item in body["data"]] == [embed_text(text, 256) for text in texts]
    single = http.post("/v1/embeddings", json={"model": "m", "input": "first text"}).json()
    assert len(single["data"][0]["embedding"]) == 1536
    assert single["usage"]["prompt_tokens"] == single["usage"]["total_tokens"] > 0
    assert answer.headers["x-sim-operation"] == "embed"


def test_one_call_may_ask_for_at_most_a_mebi_of_numbers(http):
    """inputs x dimensions is capped (2048 x 3072 used to send 25 MB); the cap is far above the lab's 1 x 256."""
    over = http.post("/v1/embeddings", json={"model": "m", "input": ["a"] * 342, "dimensions": 3072})
    assert over.status_code == 400
    error = over.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", "input")
    assert "342 inputs x 3072 dimensions" in error["message"] and f"{MAX_EMBEDDING_VALUES:,}" in error["message"]
    at_the_cap = http.post("/v1/embeddings", json={"model": "m", "input": ["a"] * 2048, "dimensions": 512})
    assert at_the_cap.status_code == 200 and len(at_the_cap.json()["data"]) == 2048
