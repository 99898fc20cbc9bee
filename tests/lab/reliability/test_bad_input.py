"""Bad input gets a clear 4xx with a stable error code from a real server: never a 500, never a traceback."""

import re
import socket
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from tests.fakes import FakeProvider
from tests.lab.reliability.reliability_testing import marked_ticket, rows_of
from tests.servers import serve
from ticket_api.config import load_settings
from ticket_api.instruments.body_limit import MAX_BODY_BYTES
from ticket_api.main import create_app

JSON = {"Content-Type": "application/json"}
TOO_BIG = 2**63  # one past the largest id PostgreSQL's bigint holds


@pytest.fixture(scope="module")
def provider() -> FakeProvider:
    """The fake provider of the served API; tests that care read its calls."""
    return FakeProvider(0.0)


@pytest.fixture(scope="module")
def api(database_url: str, provider: FakeProvider):
    """The API on a real uvicorn server in a thread; a client for it."""
    settings = load_settings(_env_file=None, database_url=database_url, db_pool_min_size=1, log_level="WARNING")
    with serve(create_app(settings, provider)) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def assert_error(answer: httpx.Response, status: int, code: str) -> None:
    """The lab's error body with this status and code, and nothing of the server's insides."""
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"] == code
    assert "Traceback" not in answer.text and 'File "' not in answer.text


def too_large_count(api: httpx.Client) -> float:
    """How many POST /v1/tickets the metrics count as body_too_large."""
    found = re.search(r'^ticket_api_tickets_total\{outcome="body_too_large"\} (\S+)$', api.get("/metrics").text, re.M)
    return float(found[1]) if found else 0.0


def test_a_body_over_the_limit_is_413_with_or_without_content_length(api, customer_id, db_conn):
    ticket = {**marked_ticket(customer_id), "body": "x" * MAX_BODY_BYTES}
    raw = httpx.Request("POST", "/", json=ticket).content
    counted = too_large_count(api)
    announced = api.post("/v1/tickets", content=raw, headers=JSON)
    assert_error(announced, 413, "body_too_large")
    chunked = api.post("/v1/tickets", content=iter([raw[:1000], raw[1000:]]), headers=JSON)
    assert "content-length" not in chunked.request.headers
    assert_error(chunked, 413, "body_too_large")
    # The rest of the body is not read: the answer says the connection closes, so no request is sent on it.
    assert announced.headers["connection"] == chunked.headers["connection"] == "close"
    assert rows_of(db_conn, ticket) == []
    assert too_large_count(api) == counted + 2  # one outcome for both ways of being too large


def test_a_body_of_many_small_chunks_is_counted_as_a_whole(api):
    pieces = (b" " * 4096 for _ in range(MAX_BODY_BYTES // 4096 + 2))
    assert_error(api.post("/v1/tickets", content=pieces, headers=JSON), 413, "body_too_large")


@pytest.mark.parametrize(("field", "limit"), [("subject", 200), ("body", 5000)])
def test_the_length_limits_count_characters_like_the_database(api, customer_id, db_conn, field, limit):
    ticket = marked_ticket(customer_id)
    longest = {**ticket, field: (ticket[field] + "\N{PILE OF POO}" * limit)[-limit:]}  # 4 bytes per character
    created = api.post("/v1/tickets", json=longest)
    assert created.status_code == 201, created.text
    assert len(created.json()[field]) == limit
    too_long = api.post("/v1/tickets", json={**ticket, field: "x" * (limit + 1)})
    assert_error(too_long, 422, "validation_error")
    assert too_long.json()["detail"][0]["loc"] == ["body", field]
    padded = api.post("/v1/tickets", json={**ticket, field: "  " + "y" * limit + "\n"})
    assert padded.status_code == 201  # stripped first, then counted


@pytest.mark.parametrize("field", ["subject", "body"])
def test_a_nul_character_is_refused_before_any_ai_work(api, provider, customer_id, field):
    calls_before = len(provider.calls)
    answer = api.post("/v1/tickets", json={**marked_ticket(customer_id), field: "before\x00after"})
    assert_error(answer, 422, "validation_error")
    assert answer.json()["detail"][0]["loc"] == ["body", field]
    assert len(provider.calls) == calls_before


@pytest.mark.parametrize(
    ("content", "headers"),
    [
        (b"{not json", JSON),
        (b"", JSON),
        (b"null", JSON),
        (b"[1, 2, 3]", JSON),
        (b'"a string"', JSON),
        (b'{"customer_id": 1, "subject": "\xff\xfe", "body": "b"}', JSON),
        (b"\xef\xbb\xbf\xff", JSON),
        (b'{"customer_id": 1, "subject": "\\ud800", "body": "b"}', JSON),
        (b"[" * 10_000 + b"]" * 10_000, JSON),
        (b'{"customer_id": 1, "subject": "s", "body": "b"}', {"Content-Type": "text/plain"}),
        (b'{"customer_id": 1, "subject": "s", "body": "b"}', {"Content-Type": "application/x-www-form-urlencoded"}),
        (b"customer_id=1&subject=s&body=b", {"Content-Type": "application/x-www-form-urlencoded"}),
        (b'{"customer_id": 1, "subject": "s", "body": "b"}', {}),
        *[
            ('{"customer_id": 1, "subject": "s", "body": "b"}'.encode(encoding), JSON)
            for encoding in ("utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be")
        ],
    ],
    ids=[
        "syntax",
        "empty",
        "null",
        "array",
        "string",
        "invalid-utf8-in-string",
        "invalid-utf8",
        "lone-surrogate",
        "nested-too-deep",
        "text-plain",
        "form-type-json-body",
        "form",
        "no-content-type",
        "utf16-bom",
        "utf16le",
        "utf16be",
        "utf32-bom",
        "utf32le",
        "utf32be",
    ],
)
def test_a_body_that_is_not_a_json_ticket_is_422(api, content, headers):
    answer = api.post("/v1/tickets", content=content, headers=headers)
    assert_error(answer, 422, "validation_error")
    assert all({"loc", "msg", "type"} <= set(field) for field in answer.json()["detail"])


def test_utf8_with_a_byte_order_mark_is_still_utf8(api, customer_id):
    ticket = marked_ticket(customer_id, "caf\N{LATIN SMALL LETTER E WITH ACUTE}")
    answer = api.post("/v1/tickets", content=b"\xef\xbb\xbf" + orjson.dumps(ticket), headers=JSON)
    assert answer.status_code == 201 and answer.json()["subject"] == ticket["subject"]


@pytest.mark.parametrize("customer_id", [0, -1, TOO_BIG, 10**400, 1.5, True, "1", "one", None, [1], {"id": 1}])
def test_an_impossible_customer_id_is_422(api, customer_id):
    body = {"customer_id": customer_id, "subject": "s", "body": "b"}
    raw = (
        httpx.Request("POST", "/", json=body).content
        if customer_id != 10**400
        else (b'{"customer_id": 1' + b"0" * 400 + b', "subject": "s", "body": "b"}')
    )
    assert_error(api.post("/v1/tickets", content=raw, headers=JSON), 422, "validation_error")


@pytest.mark.parametrize("ticket_id", ["0", "-1", str(TOO_BIG), "9" * 400, "1.5", "1e3", "abc", "%00", "1%202"])
def test_an_impossible_ticket_id_in_the_path_is_422(api, ticket_id):
    answer = api.get(f"/v1/tickets/{ticket_id}")
    assert_error(answer, 422, "validation_error")
    assert answer.json()["detail"][0]["loc"] == ["path", "ticket_id"]


def test_a_possible_but_unknown_ticket_id_is_404(api):
    assert_error(api.get(f"/v1/tickets/{TOO_BIG - 1}"), 404, "ticket_not_found")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "customer_id"),
        ({"customer_id": 0}, "customer_id"),
        ({"customer_id": TOO_BIG}, "customer_id"),
        ({"customer_id": "9" * 400}, "customer_id"),
        ({"customer_id": 1, "limit": 0}, "limit"),
        ({"customer_id": 1, "limit": 101}, "limit"),
        ({"customer_id": 1, "limit": "ten"}, "limit"),
        ({"customer_id": 1, "after": -1}, "after"),
        ({"customer_id": 1, "after": TOO_BIG}, "after"),
        ({"customer_id": 1, "after": "1e9"}, "after"),
    ],
)
def test_impossible_query_parameters_are_422(api, params, field):
    answer = api.get("/v1/tickets", params=params)
    assert_error(answer, 422, "validation_error")
    assert answer.json()["detail"][0]["loc"] == ["query", field]


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("DELETE", "/v1/tickets", 405, "method_not_allowed"),
        ("PUT", "/v1/tickets/1", 405, "method_not_allowed"),
        ("GET", "/v1/nothing", 404, "not_found"),
        ("GET", "/v1/tickets/1/../../etc/passwd", 404, "not_found"),
    ],
)
def test_unknown_paths_and_methods_have_codes_too(api, method, path, status, code):
    assert_error(api.request(method, path), status, code)


def test_a_request_the_http_parser_refuses_is_400_not_500(api):
    """Garbage below HTTP never reaches the app: uvicorn answers 400 itself and the server lives on."""
    address = urlsplit(str(api.base_url))
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(b"POST /v1/tickets HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n")
        assert sock.recv(200).startswith(b"HTTP/1.1 400")
    assert api.get("/health").status_code == 200
