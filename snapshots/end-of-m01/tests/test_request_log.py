"""The request log line, the request id and the Server-Timing header."""

import logging
import re

LOG_LINE = re.compile(r"^(GET|POST) (\S+) (\d{3}) (\d+)ms queries=(\d+) id=([A-Za-z0-9._-]+)$")


def request_lines(caplog) -> list[re.Match]:
    return [m for r in caplog.records if r.name == "ticket_api" and (m := LOG_LINE.match(r.getMessage()))]


def test_every_request_logs_one_line_in_the_course_format(client, caplog):
    with caplog.at_level(logging.INFO, logger="ticket_api"):
        client.get("/health")
    (line,) = request_lines(caplog)
    assert line.group(1, 2, 3) == ("GET", "/health", "200")
    assert line.group(5) == "0"


def test_a_ticket_line_counts_its_queries(client, customer_id, caplog):
    with caplog.at_level(logging.INFO, logger="ticket_api"):
        client.post("/v1/tickets", json={"customer_id": customer_id, "subject": "s", "body": "b"})
    (line,) = request_lines(caplog)
    assert line.group(3) == "201"
    assert int(line.group(5)) >= 3


def test_a_request_id_is_made_when_the_client_sends_none(client, caplog):
    with caplog.at_level(logging.INFO, logger="ticket_api"):
        response = client.get("/health")
    request_id = response.headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{12}", request_id)
    assert request_lines(caplog)[0].group(6) == request_id


def test_the_clients_request_id_is_sent_back_and_logged(client, caplog):
    with caplog.at_level(logging.INFO, logger="ticket_api"):
        response = client.get("/health", headers={"X-Request-ID": "probe-42.a_b"})
    assert response.headers["X-Request-ID"] == "probe-42.a_b"
    assert request_lines(caplog)[0].group(6) == "probe-42.a_b"


def test_an_unsafe_request_id_is_replaced_not_echoed(client):
    response = client.get("/health", headers={"X-Request-ID": "<script>alert(1)</script>"})
    assert "script" not in response.headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{12}", response.headers["X-Request-ID"])


def test_errors_are_logged_with_their_status(client, caplog):
    with caplog.at_level(logging.INFO, logger="ticket_api"):
        client.get("/v1/tickets/123456789")
    assert request_lines(caplog)[0].group(3) == "404"
