"""Bad input always gets a 4xx in OpenAI's error shape, never a 500."""

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.asgi import MAX_BODY_BYTES
from tests.lab.simulator.sim_testing import chat_body

CHAT = "/v1/chat/completions"
EMBEDDINGS = "/v1/embeddings"
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def fast(server_factory):
    """A simulator without any delay (--speed 0), for many quick requests."""
    with server_factory("--speed", "0", "--quota", "0").client() as client:
        yield client


def assert_openai_error(answer: httpx.Response, status: int, param: str | None = None) -> None:
    """The answer has this status and an OpenAI-style error body (naming `param`, if given)."""
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    if param is not None:
        assert error["param"] == param


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b"{", None),
        (b"", None),
        (b"[]", None),
        (b"\xff\xfe", None),
        (b'{"messages": [{"role": "user", "content": "hi"}]}', "model"),
        (b'{"model": 5, "messages": [{"role": "user", "content": "hi"}]}', "model"),
        (b'{"model": "m"}', "messages"),
        (b'{"model": "m", "messages": {}}', "messages"),
        (b'{"model": "m", "messages": []}', "messages"),
        (b'{"model": "m", "messages": [1]}', "messages[0]"),
        (b'{"model": "m", "messages": [{"content": "hi"}]}', "messages[0]"),
        (b'{"model": "m", "messages": [{"role": "user", "content": 7}]}', "messages[0].content"),
    ],
)
def test_malformed_chat_bodies(fast, raw, param):
    assert_openai_error(fast.post(CHAT, content=raw), 400, param)


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"stream": "yes"}, "stream"),
        ({"stream": True, "stream_options": []}, "stream_options"),
        ({"stream": True, "stream_options": {"include_usage": "true"}}, "stream_options.include_usage"),
        ({"metadata": "classify"}, "metadata"),
        ({"metadata": {"operation": "summarise"}}, "metadata.operation"),
        ({"response_format": "json"}, "response_format"),
    ],
)
def test_chat_fields_of_the_wrong_type(fast, extra, param):
    assert_openai_error(fast.post(CHAT, json={"model": "m", "messages": MESSAGES, **extra}), 400, param)


def test_an_unknown_operation_header(fast):
    answer = fast.post(CHAT, json=chat_body("draft"), headers={"X-Sim-Operation": "translate"})
    assert_openai_error(answer, 400, "X-Sim-Operation")


def test_a_strange_but_valid_response_format_falls_back_to_the_default_enums(fast):
    answer = fast.post(CHAT, json=chat_body("classify", response_format={"type": "json_schema", "json_schema": "x"}))
    assert answer.status_code == 200


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({}, "input"),
        ({"input": 5}, "input"),
        ({"input": []}, "input"),
        ({"input": [1, 2]}, "input"),
        ({"input": ["ok", ""]}, "input"),
        ({"input": ["x"] * 2049}, "input"),
        ({"input": "x", "dimensions": 0}, "dimensions"),
        ({"input": "x", "dimensions": 5000}, "dimensions"),
        ({"input": "x", "dimensions": "256"}, "dimensions"),
        ({"input": "x", "dimensions": True}, "dimensions"),
        ({"input": "x", "encoding_format": "hex"}, "encoding_format"),
    ],
)
def test_malformed_embeddings_bodies(fast, fields, param):
    assert_openai_error(fast.post(EMBEDDINGS, json={"model": "m", **fields}), 400, param)


def test_a_body_over_one_mebibyte_is_refused_with_413(fast):
    oversized = b'{"model": "m", "input": "' + b"a" * MAX_BODY_BYTES + b'"}'
    assert_openai_error(fast.post(EMBEDDINGS, content=oversized), 413)
    chunked = fast.post(EMBEDDINGS, content=iter([oversized[:1000], oversized[1000:]]))  # no Content-Length
    assert_openai_error(chunked, 413)
    just_fits = b'{"model": "m", "input": "' + b"a " * ((MAX_BODY_BYTES - 100) // 2) + b'"}'
    assert fast.post(EMBEDDINGS, content=just_fits).status_code == 200


def test_unknown_paths_and_methods(fast):
    assert_openai_error(fast.get("/v1/completions"), 404)
    assert_openai_error(fast.post("/v1/chat/completions/"), 404)
    wrong_method = fast.get(CHAT)
    assert_openai_error(wrong_method, 405)
    assert wrong_method.headers["allow"] == "POST"
    assert_openai_error(fast.delete("/admin/quota"), 405)
    assert fast.get("/health").json() == {"status": "ok"}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
chat_fields = st.fixed_dictionaries(
    {},
    optional={
        "model": json_values | st.just("m"),
        "messages": json_values | st.just(MESSAGES),
        "stream": json_values,
        "stream_options": json_values,
        "metadata": json_values,
        "response_format": json_values,
    },
)
embedding_fields = st.fixed_dictionaries(
    {},
    optional={
        "model": json_values | st.just("m"),
        "input": json_values | st.just(["a", "b"]),
        "dimensions": json_values | st.integers(-5, 4000),
        "encoding_format": json_values | st.just("base64"),
    },
)


@settings(max_examples=150, database=None, deadline=None)
@given(path_and_body=st.tuples(st.just(CHAT), chat_fields) | st.tuples(st.just(EMBEDDINGS), embedding_fields))
def test_no_body_ever_causes_a_server_error(fast, path_and_body):
    path, body = path_and_body
    answer = fast.post(path, json=body)
    assert answer.status_code in (200, 400), answer.text
    if answer.status_code == 400:
        assert set(answer.json()["error"]) == {"message", "type", "param", "code"}
