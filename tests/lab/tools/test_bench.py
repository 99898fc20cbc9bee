"""scripts.bench: its CPU accounting (the measured window only, processes born inside it included), and wrk."""

import asyncio

import pytest
from fastapi import FastAPI, Request

from scripts.toolkit import wrk
from scripts.toolkit.levels import cpu_between
from tests.servers import serve


def test_cpu_between_counts_each_process_from_its_first_look_and_a_newcomer_whole():
    before = {"api loop": {10: 1.0}, "api threads": {10: 0.5}, "postgres": {20: 2.0, 21: 0.1}}
    after = {
        "api loop": {10: 1.75},
        "api threads": {10: 0.75},
        # 22 is a backend the pool opened during the window; 21 exited (its last part is unknowable)
        "postgres": {20: 2.5, 22: 0.25},
    }
    assert cpu_between(before, after) == {"api loop": 0.75, "api threads": 0.25, "postgres": 0.75}


def test_a_lua_string_holds_any_bytes_the_tickets_have():
    text = 'Ticket "7" \\ café\n'.encode()
    literal = wrk.lua_string(text)
    assert literal.isascii() and literal.startswith('"') and literal.endswith('"')
    assert "\\034" in literal and "\\092" in literal and "\\195\\169" in literal and "\\010" in literal


@pytest.mark.skipif(not wrk.available(), reason="wrk is not installed (Debian's package wrk)")
def test_wrk_drives_a_closed_loop_and_its_mean_is_the_servers_time():
    app = FastAPI()
    bodies = []

    @app.post("/v1/tickets", status_code=201)
    async def create(request: Request) -> dict:
        bodies.append(await request.json())
        await asyncio.sleep(0.1)
        return {}

    with serve(app) as url:
        figures = wrk.run_wrk(url, users=4, duration_s=2, ramp_s=0.4, bodies=[b'{"n": 1}', b'{"n": 2}'])
    assert figures["failed"] == 0
    assert 100 <= figures["mean_ms"] < 150  # the server's 100 ms, and little more
    assert 4 * 2.4 / 0.1 * 0.7 < figures["requests"] <= 4 * 2.4 / 0.1  # closed loop: 4 users x 24 rounds at most
    assert {body["n"] for body in bodies} == {1, 2}
