"""scripts.bench: its CPU accounting (the measured window only, processes born inside it included), wrk, and a short
run on a PostgreSQL of DATABASE_URL."""

import asyncio
import json

import pytest
from fastapi import FastAPI, Request

from scripts.toolkit import wrk
from scripts.toolkit.cpu import cpu_between
from tests.lab.tools.commands import run_module
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


def test_with_database_url_set_the_bench_runs_and_says_in_one_line_that_postgres_is_not_counted(
    lab_database_url, tmp_path
):
    # 256 users: the shortest level the bench allows (it measures 500 tickets at least), alone of its kind.
    levels = ["--users", "256", "--two-process-users", "0", "--thread-users", "0", "--wrk-users", "0"]
    result = run_module(
        "scripts.bench", *levels, "--duration", "1", "--alone", "2", "--out", str(tmp_path),
        env={"DATABASE_URL": lab_database_url},
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr[-2000:]  # 1: a target missed on a busy machine
    assert "Traceback" not in result.stderr
    warning = "warning: PostgreSQL's CPU is not counted: DATABASE_URL is set"
    assert sum(line.startswith(warning) for line in result.stderr.splitlines()) == 1
    (level,) = json.loads((tmp_path / "bench.json").read_text())["levels"]
    assert level["users"] == 256 and level["tickets"] > 0
    assert set(level["cpu_ms_per_ticket"]) == {"api loop", "api threads", "simulator", "generator"}
