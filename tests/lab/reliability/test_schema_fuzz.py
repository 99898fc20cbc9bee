"""Property-based: schemathesis sends what the API's own OpenAPI schema allows, and what it forbids.

Every operation of the schema is called on a real server, with a fixed seed: no answer may be a
5xx, and every answer must match the schema (its status, content type, headers and body). Invalid
input must be refused with a 4xx.
"""

import psycopg
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.fakes import FakeProvider
from tests.servers import serve
from ticket_api import main
from ticket_api.config import load_settings
from ticket_api.main import create_app

SCHEMA = schemathesis.openapi.from_dict(main.app.openapi())
OPERATIONS = {result.ok().label: result.ok() for result in SCHEMA.get_all_operations()}
CONFORMANCE = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
EXAMPLES = {"POST /v1/tickets": 300}  # the one that writes, and the richest input; the others get 100
CASES = [(label, GenerationMode.POSITIVE) for label in OPERATIONS] + [
    (label, GenerationMode.NEGATIVE)
    for label, operation in OPERATIONS.items()
    if operation.body or any(True for _ in operation.iter_parameters())  # without input nothing can be invalid
]


@pytest.fixture(scope="module")
def served(database_url: str) -> str:
    """The API with an instant fake provider on a real server in a thread; its URL."""
    settings = load_settings(_env_file=None, database_url=database_url, db_pool_min_size=1, log_level="WARNING")
    with serve(create_app(settings, FakeProvider(0.0))) as url:
        yield url


@pytest.fixture(scope="module")
def known_customer(database_url: str) -> int:
    """A customer that exists, so that generated tickets also get past the customer check to the INSERT."""
    with psycopg.connect(database_url) as conn:
        return conn.execute("SELECT min(id) FROM customers").fetchone()[0]


def test_the_schema_covers_the_ticket_routes():
    assert {"POST /v1/tickets", "GET /v1/tickets", "GET /v1/tickets/{ticket_id}", "GET /health"} <= set(OPERATIONS)
    assert set(OPERATIONS["POST /v1/tickets"].definition.raw["responses"]) == {
        "201",
        "404",
        "413",
        "422",
        "502",
        "503",
        "504",
    }


@pytest.mark.parametrize(("label", "mode"), CASES, ids=[f"{label} {mode.value}" for label, mode in CASES])
def test_no_server_error_and_no_answer_outside_the_schema(served, known_customer, label, mode):
    checks = CONFORMANCE + ([negative_data_rejection] if mode is GenerationMode.NEGATIVE else [])

    @settings(
        max_examples=EXAMPLES.get(label, 100),
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(case=OPERATIONS[label].as_strategy(generation_mode=mode), known=st.booleans())
    def call(case, known: bool) -> None:
        # Random ids are almost never customers: half the valid tickets get a real one, to reach the INSERT.
        if known and mode is GenerationMode.POSITIVE and isinstance(case.body, dict) and "customer_id" in case.body:
            case.body["customer_id"] = known_customer
        case.call_and_validate(base_url=served, checks=checks)

    call()
