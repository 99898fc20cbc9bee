"""The official openai package talks to the simulator: chat (plain and streamed) and embeddings."""

import json

import openai
import pytest

from simulator.embeddings import embed_text

CATEGORIES = ["billing", "bug", "feature_request", "other"]
PRIORITIES = ["p1", "p2", "p3"]
CLASSIFICATION_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "classification",
        "schema": {
            "type": "object",
            "properties": {
                "category": {"type": "string", "enum": CATEGORIES},
                "priority": {"type": "string", "enum": PRIORITIES},
            },
            "required": ["category", "priority"],
        },
    },
}


@pytest.fixture(scope="module")
def client(sim):
    """An openai.OpenAI client pointed at the simulator, without retries."""
    with openai.OpenAI(base_url=sim.api_url, api_key="test-key", max_retries=0) as openai_client:
        yield openai_client


def test_a_plain_classify_call(client):
    answer = client.chat.completions.create(
        model="my-model",
        messages=[{"role": "user", "content": "Subject: Refund\n\nPlease refund my invoice."}],
        response_format=CLASSIFICATION_FORMAT,
        metadata={"operation": "classify"},
    )
    assert answer.model == "my-model"
    classification = json.loads(answer.choices[0].message.content)
    assert classification == {"category": "billing", "priority": classification["priority"]}
    assert classification["priority"] in PRIORITIES
    assert answer.usage.total_tokens == answer.usage.prompt_tokens + answer.usage.completion_tokens
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0


def test_a_streamed_draft(client):
    stream = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Subject: Cannot log in\n\nPassword reset fails."}],
        stream=True,
        stream_options={"include_usage": True},
        metadata={"operation": "draft"},
    )
    chunks = list(stream)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert "Cannot log in" in text
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_embeddings_as_base64_by_default_and_as_floats(client):
    texts = ["Refund for a double charge", "The app crashes on start"]
    default = client.embeddings.create(model="text-embedding-3-small", input=texts, dimensions=256)
    floats = client.embeddings.create(
        model="text-embedding-3-small", input=texts, dimensions=256, encoding_format="float"
    )
    assert [item.index for item in default.data] == [0, 1]
    for item, text in zip(default.data, texts, strict=False):
        assert item.embedding == pytest.approx(embed_text(text, 256), abs=1e-6)  # float32 on the wire
    assert floats.data[1].embedding == embed_text(texts[1], 256)
    assert default.usage.prompt_tokens > 0


def test_errors_become_the_clients_exceptions(client):
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], extra_headers={"X-Sim-Fault": "error"}
        )
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], extra_headers={"X-Sim-Fault": "rate_limit"}
        )
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="m", messages=[])


def test_the_model_list(client):
    assert {"gpt-4o-mini", "text-embedding-3-small"} <= {model.id for model in client.models.list()}
