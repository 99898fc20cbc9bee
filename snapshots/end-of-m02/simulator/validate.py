"""Check request bodies against the parts of OpenAI's schema the simulator uses.

Every problem becomes an InvalidRequest (400) naming the offending field, never a 500.
"""

import dataclasses

import orjson

from simulator.content import DEFAULT_CATEGORIES, DEFAULT_PRIORITIES
from simulator.embeddings import MAX_DIMENSIONS
from simulator.errors import InvalidRequest

CHAT_OPERATIONS = ("classify", "draft")
DEFAULT_CHAT_OPERATION = "draft"
MAX_EMBEDDING_INPUTS = 2048  # OpenAI's limit too
# The work of one embeddings call: inputs x dimensions numbers to compute and send (2**20 is ~4 MB of JSON).
# OpenAI bounds it by tokens (300,000 a call), which the 1 MiB body limit keeps under; the lab sends 1 x 256.
MAX_EMBEDDING_VALUES = 2**20


@dataclasses.dataclass(frozen=True, slots=True)
class ChatCall:
    """What the simulator needs from a chat completion request."""

    model: str
    operation: str
    prompt_text: str
    user_text: str
    message_count: int
    stream: bool
    include_usage: bool
    categories: tuple[str, ...]
    priorities: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class EmbeddingsCall:
    """What the simulator needs from an embeddings request."""

    model: str
    inputs: list[str]
    dimensions: int
    base64: bool


def parse_json_object(body: bytes) -> dict:
    """The request body as a JSON object."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise InvalidRequest("The request body is not valid JSON.") from None
    if not isinstance(value, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    return value


def parse_chat(body: dict, operation_header: str | None) -> ChatCall:
    """Check a chat completion body; the X-Sim-Operation header wins over metadata.operation."""
    model = _required_string(body, "model")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("'messages' must be a non-empty array.", param="messages")
    texts, user_texts = [], []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise InvalidRequest(
                f"messages[{index}] must be an object with a string 'role'.", param=f"messages[{index}]"
            )
        text = _message_text(message.get("content"), index)
        texts.append(text)
        if message["role"] == "user":
            user_texts.append(text)
    stream = _optional(body, "stream", bool, False)
    stream_options = _optional(body, "stream_options", dict, {})
    include_usage = _optional(stream_options, "include_usage", bool, False, param="stream_options.include_usage")
    categories, priorities = _classification_enums(body.get("response_format"))
    return ChatCall(
        model=model,
        operation=chat_operation(body, operation_header),
        prompt_text="\n".join(texts),
        user_text="\n".join(user_texts) or "\n".join(texts),
        message_count=len(messages),
        stream=stream,
        include_usage=include_usage,
        categories=categories,
        priorities=priorities,
    )


def parse_embeddings(body: dict) -> EmbeddingsCall:
    """Check an embeddings body: `input` is a string or a list of strings."""
    model = _required_string(body, "model")
    raw = body.get("input")
    inputs = [raw] if isinstance(raw, str) else raw
    if not isinstance(inputs, list) or not inputs or not all(isinstance(item, str) for item in inputs):
        raise InvalidRequest("'input' must be a string or a non-empty array of strings.", param="input")
    if len(inputs) > MAX_EMBEDDING_INPUTS:
        raise InvalidRequest(f"'input' may hold at most {MAX_EMBEDDING_INPUTS} strings.", param="input")
    if any(not item for item in inputs):
        raise InvalidRequest("'input' must not contain empty strings.", param="input")
    dimensions = _optional(body, "dimensions", int, 1536)
    if not 1 <= dimensions <= MAX_DIMENSIONS:
        raise InvalidRequest(f"'dimensions' must be between 1 and {MAX_DIMENSIONS}.", param="dimensions")
    if len(inputs) * dimensions > MAX_EMBEDDING_VALUES:
        raise InvalidRequest(
            f"{len(inputs)} inputs x {dimensions} dimensions is over the {MAX_EMBEDDING_VALUES:,} "
            "numbers one call may ask for: send fewer inputs per call.",
            param="input",
        )
    encoding = _optional(body, "encoding_format", str, "float")
    if encoding not in ("float", "base64"):
        raise InvalidRequest("'encoding_format' must be 'float' or 'base64'.", param="encoding_format")
    return EmbeddingsCall(model=model, inputs=inputs, dimensions=dimensions, base64=encoding == "base64")


def chat_operation(body: dict, operation_header: str | None) -> str:
    """classify or draft: from the header, else metadata.operation, else the default (draft)."""
    metadata = _optional(body, "metadata", dict, {})
    if operation_header is not None:
        operation, param = operation_header.strip().lower(), "X-Sim-Operation"
    else:
        operation, param = metadata.get("operation", DEFAULT_CHAT_OPERATION), "metadata.operation"
    if operation not in CHAT_OPERATIONS:
        raise InvalidRequest(f"{param} must be 'classify' or 'draft', not {operation!r}.", param=param)
    return operation


def _classification_enums(response_format) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The category and priority enums of a json_schema response_format, or the default ones."""
    if response_format is None:
        return DEFAULT_CATEGORIES, DEFAULT_PRIORITIES
    if not isinstance(response_format, dict) or not isinstance(response_format.get("type"), str):
        raise InvalidRequest("'response_format' must be an object with a string 'type'.", param="response_format")
    json_schema = response_format.get("json_schema") if response_format["type"] == "json_schema" else None
    schema = json_schema.get("schema") if isinstance(json_schema, dict) else None
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return (_enum(properties, "category") or DEFAULT_CATEGORIES, _enum(properties, "priority") or DEFAULT_PRIORITIES)


def _enum(properties, name: str) -> tuple[str, ...] | None:
    """The string values of properties[name].enum, or None if there are none."""
    if not isinstance(properties, dict) or not isinstance(properties.get(name), dict):
        return None
    values = properties[name].get("enum")
    if isinstance(values, list) and values and all(isinstance(value, str) for value in values):
        return tuple(values)
    return None


def _message_text(content, index: int) -> str:
    """The text of a message: a string, or the text parts of a list of content parts."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(part, dict) for part in content):
        return " ".join(part["text"] for part in content if isinstance(part.get("text"), str))
    raise InvalidRequest(
        f"messages[{index}].content must be a string or an array of content parts.", param=f"messages[{index}].content"
    )


def _required_string(body: dict, field: str) -> str:
    """A required, non-empty string field."""
    value = body.get(field)
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"'{field}' is required and must be a non-empty string.", param=field)
    return value


def _optional(body: dict, field: str, kind: type, default, param: str | None = None):
    """An optional field of one JSON type; null counts as absent. bool is not accepted as int."""
    value = body.get(field)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidRequest(f"'{param or field}' must be of type {kind.__name__}.", param=param or field)
    return value
