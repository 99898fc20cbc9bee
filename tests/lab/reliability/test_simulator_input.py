"""The simulator under any request: every route, method, header and body gets a 4xx or its answer, never a 5xx.

tests/lab/simulator/ checks each bad field by name; this fuzzes whole requests (paths, methods, the
X-Sim-* and Authorization headers, raw bytes as bodies, the admin endpoints) against a real server.
The only 5xx allowed is the one asked for with `X-Sim-Fault: error` or `unavailable`.
"""

import json
import string

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.app import ROUTES
from simulator.faults import FAULTS

HANG_S = 0.2
ERROR_FIELDS = {"message", "type", "param", "code"}
FORCED_5XX = {"error": "simulated_error", "unavailable": "simulated_unavailable"}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
FIELDS = [
    "model",
    "messages",
    "input",
    "metadata",
    "stream",
    "stream_options",
    "response_format",
    "dimensions",
    "encoding_format",
    "requests_per_minute",
]


def as_json(value: object) -> bytes:
    """JSON bytes (by the standard library, which writes integers of any size)."""
    return json.dumps(value).encode()


def near(valid: dict) -> st.SearchStrategy[bytes]:
    """A valid body, or one with up to two fields replaced by anything: past the first checks, to deeper ones."""
    changes = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=2)
    return st.builds(lambda replaced: as_json({**valid, **replaced}), changes)


any_body = st.binary(max_size=120) | json_values.map(as_json)
any_path = st.text(string.ascii_letters + string.digits + "/._-", max_size=24).map(lambda path: "/" + path)
# (method, path, body): each route with bodies close to its own, and anything on any path.
requests = st.one_of(
    st.tuples(
        st.just("POST"),
        st.just("/v1/chat/completions"),
        near(
            {
                "model": "gpt-4o-mini",
                "messages": [{"role": "user", "content": "hi"}],
                "metadata": {"operation": "classify"},
            }
        ),
    ),
    st.tuples(st.just("POST"), st.just("/v1/embeddings"), near({"model": "text-embedding-3-small", "input": "hi"})),
    st.tuples(st.just("PUT"), st.just("/admin/quota"), near({"requests_per_minute": 0})),
    st.tuples(
        st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]), any_path | st.sampled_from(sorted(ROUTES)), any_body
    ),
)
# Any latin-1 text an HTTP client may send as a header value (no control characters, no spaces around it).
header_values = st.text(st.characters(codec="latin-1", exclude_categories=("Cc",)), max_size=16).map(
    lambda text: text.encode("latin-1").strip(b" ")
)
headers = st.fixed_dictionaries(
    {},
    optional={
        "X-Sim-Fault": st.sampled_from(FAULTS).map(str.encode) | st.sampled_from([b"Error", b"HANG"]) | header_values,
        "X-Sim-Operation": st.sampled_from([b"classify", b"draft", b"Draft"]) | header_values,
        "Authorization": header_values.map(lambda value: (b"Bearer " + value).strip(b" ")),
        "Content-Type": st.sampled_from([b"application/json", b"text/plain"]) | header_values,
    },
)


@pytest.fixture(scope="module")
def fast_simulator(start_simulator):
    """A simulator without delays and without a quota; a hang lasts 0.2 s."""
    return start_simulator("--hang-s", str(HANG_S), speed=0)


@pytest.fixture(scope="module")
def sim_client(fast_simulator):
    """One client for the many requests of the fuzz."""
    with httpx.Client(base_url=fast_simulator.url, timeout=10) as client:
        yield client


@settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=requests, request_headers=headers)
def test_no_request_gets_a_server_error_unless_it_asks_for_one(sim_client, request, request_headers):
    method, path, body = request
    answer = sim_client.request(method, path, content=body, headers=request_headers)
    payload = answer.json()
    assert answer.headers["content-type"] == "application/json"
    if answer.status_code >= 400:
        assert set(payload["error"]) == ERROR_FIELDS, payload
    if answer.status_code >= 500:
        forced = request_headers.get("X-Sim-Fault", b"").decode("latin-1").strip().lower()
        assert payload["error"]["code"] == FORCED_5XX.get(forced), (answer.status_code, payload)


def test_the_admin_endpoint_keeps_its_quota_through_bad_bodies(sim_client):
    assert sim_client.put("/admin/quota", json={"requests_per_minute": 5}).status_code == 200
    for raw in (
        b"",
        b"{",
        b"\xff",
        b"[]",
        b'{"requests_per_minute": 1e400}',
        b'{"requests_per_minute": 99999999999999999999999}',
    ):
        assert sim_client.put("/admin/quota", content=raw).status_code == 400
    assert sim_client.get("/admin/quota").json()["requests_per_minute"] == 5
    assert sim_client.put("/admin/quota", json={"requests_per_minute": 0}).status_code == 200
