"""A ticket's AI work: classify it, draft a reply, embed it — three provider calls, one after another."""

from dataclasses import dataclass

import orjson

from ticket_api.errors import ProviderUnavailable
from ticket_api.instruments.requestlog import Timer

CATEGORIES = ("billing", "technical", "account", "shipping", "general")
PRIORITIES = ("low", "normal", "high", "urgent")
CHAT_MODEL = "gpt-4o-mini"
EMBEDDING_MODEL = "text-embedding-3-small"
EMBEDDING_DIMENSIONS = 256


@dataclass(frozen=True)
class AiWork:
    """What the provider said about one ticket, which models answered and how long each call took."""

    category: str
    priority: str
    draft_reply: str
    embedding: list[float]
    models: dict[str, str]
    elapsed_ms: dict[str, float]


def classify_request(subject: str, body: str) -> dict:
    """The chat request that asks for a category and a priority, as JSON."""
    schema = {
        "type": "object",
        "properties": {
            "category": {"type": "string", "enum": list(CATEGORIES)},
            "priority": {"type": "string", "enum": list(PRIORITIES)},
        },
        "required": ["category", "priority"],
        "additionalProperties": False,
    }
    answer_as = {"type": "json_schema", "json_schema": {"name": "classification", "schema": schema}}
    request = chat_request("classify", "Classify this support ticket: a category and a priority.", subject, body)
    return {**request, "response_format": answer_as}


def draft_request(subject: str, body: str) -> dict:
    """The chat request that asks for a reply to the customer."""
    return chat_request("draft", "You are a friendly support agent. Draft a short reply.", subject, body)


def chat_request(operation: str, instructions: str, subject: str, body: str) -> dict:
    """A chat request: the instructions, then the ticket; `operation` tells the provider's records which call it is."""
    return {
        "model": CHAT_MODEL,
        "messages": [
            {"role": "system", "content": instructions},
            {"role": "user", "content": f"Subject: {subject}\n\n{body}"},
        ],
        "metadata": {"operation": operation},
    }


def embed_request(subject: str, body: str) -> dict:
    """The embeddings request for the ticket's subject and body."""
    return {"model": EMBEDDING_MODEL, "input": f"{subject}\n\n{body}", "dimensions": EMBEDDING_DIMENSIONS}


def do_ai_work(provider, subject: str, body: str, timer: Timer) -> AiWork:
    """Classify, draft and embed with provider.call(): each call waits, holding this thread."""
    with timer("ai"):
        classified, classify_ms = provider.call("/chat/completions", classify_request(subject, body))
        drafted, draft_ms = provider.call("/chat/completions", draft_request(subject, body))
        embedded, embed_ms = provider.call("/embeddings", embed_request(subject, body))
    return read_answers(classified, drafted, embedded, (classify_ms, draft_ms, embed_ms))


def read_answers(classified: dict, drafted: dict, embedded: dict, elapsed: tuple[float, float, float]) -> AiWork:
    """Turn the three provider answers into AiWork; an answer we cannot use is the provider's fault (502)."""
    try:
        labels = orjson.loads(classified["choices"][0]["message"]["content"])
        category, priority = labels["category"], labels["priority"]
        draft_reply = drafted["choices"][0]["message"]["content"].strip()
        embedding = embedded["data"][0]["embedding"]
    except (KeyError, IndexError, TypeError, AttributeError, orjson.JSONDecodeError):
        raise ProviderUnavailable("the AI provider's answer has an unexpected shape") from None
    if category not in CATEGORIES or priority not in PRIORITIES:
        raise ProviderUnavailable(f"the AI provider classified the ticket as {category!r}/{priority!r}")
    if not draft_reply or not isinstance(embedding, list) or len(embedding) != EMBEDDING_DIMENSIONS:
        raise ProviderUnavailable("the AI provider's draft or embedding is unusable")
    return AiWork(
        category=category,
        priority=priority,
        draft_reply=draft_reply,
        embedding=embedding,
        models={
            "classify": classified.get("model", CHAT_MODEL),
            "draft": drafted.get("model", CHAT_MODEL),
            "embed": embedded.get("model", EMBEDDING_MODEL),
        },
        elapsed_ms=dict(zip(("classify", "draft", "embed"), elapsed, strict=True)),
    )
