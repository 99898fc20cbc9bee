"""The bench's reference: the plainest FastAPI app that does a ticket's I/O, and nothing else.

`uvicorn scripts.reference_api:app`, with the API's settings in the environment (PROVIDER_URL,
DATABASE_URL, the pool sizes). Like the API's async mode, it checks the customer in the thread pool
on a psycopg pool of the API's sizes and psycopg_pool's defaults (no check of a connection before it
is lent: the plain app a student would write), makes the three provider calls through
`httpx.AsyncClient` over httpx-aiohttp's transport, and saves the ticket and its AI results in one
short transaction. It has no middleware, metrics, request log, watchdog, idempotency, Server-Timing
or garbage-collector settings. `python -m scripts.bench` runs it beside the API on the same generator
and simulator, so that what the stack itself costs in this hour of the machine is measured too.

REFERENCE_OPTION turns on one public option of the stack that a project could take, for
`python -m scripts.bench --options` to measure against the reference as it is (OPTIONS).
"""

import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import Body, Depends, FastAPI, HTTPException, Request, Response
from httpx_aiohttp import AiohttpTransport
from psycopg_pool import ConnectionPool
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from ticket_api.ai import AiWork, classify_request, draft_request, embed_request, read_answers
from ticket_api.config import load_settings
from ticket_api.instruments.connections import check_if_server_wrote, resolve_dsn
from ticket_api.models import Ticket
from ticket_api.provider import client_options

OPTIONS = {
    "checked-pool": "the pool checks a connection before it lends it, as the API's does (check_if_server_wrote)",
    "json-body": "the body read as bytes and validated by pydantic's JSON parser (model_validate_json)",
    "response-direct": "the route returns a Response of the ticket's model_dump_json(), not a dict to validate",
    "binary-params": "the AI results' INSERT sends its parameters in binary (execute(..., binary=True))",
}
OPTION = os.environ.get("REFERENCE_OPTION", "")
if OPTION not in ("", *OPTIONS):
    raise SystemExit(f"REFERENCE_OPTION={OPTION!r} is none of {', '.join(OPTIONS)}")


class NewTicket(BaseModel):
    """The body of POST /v1/tickets, without the API's constraints (strict ids, lengths, no NUL)."""

    customer_id: int
    subject: str
    body: str


async def json_body(request: Request) -> NewTicket:
    """The body validated from its bytes by pydantic's own JSON parser (a bad body is a 500 here: measuring only)."""
    return NewTicket.model_validate_json(await request.body())


# FastAPI's own reading (json.loads, then validation of the dict), or the option's.
READ_BODY = Depends(json_body) if OPTION == "json-body" else Body()


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """One psycopg pool and one provider client for the process."""
    settings = load_settings()
    options = client_options(settings)  # the API's own: the provider's address and key, the pool's size, the timeouts
    app.state.client = httpx.AsyncClient(transport=AiohttpTransport(limits=options["limits"]), **options)
    pool = ConnectionPool(
        resolve_dsn(settings),
        min_size=settings.db_pool_min_size,
        max_size=settings.db_pool_max_size,
        check=check_if_server_wrote if OPTION == "checked-pool" else None,
        open=False,
    )
    app.state.pool = pool
    await run_in_threadpool(pool.open, wait=True)
    try:
        yield
    finally:
        await app.state.client.aclose()
        await run_in_threadpool(pool.close)


app = FastAPI(lifespan=lifespan)


@app.get("/health")
async def health() -> dict:
    """Nothing to do: how free the event loop is."""
    return {"status": "ok"}


@app.post("/v1/tickets", status_code=201, response_model=Ticket)
async def create_ticket(request: Request, new: NewTicket = READ_BODY) -> dict | Response:
    """Check the customer, do the three provider calls, save the ticket and its results."""
    pool, client = request.app.state.pool, request.app.state.client
    if not await run_in_threadpool(customer_exists, pool, new.customer_id):
        raise HTTPException(404, "customer not found")
    classified, classify_ms = await call(client, "/chat/completions", classify_request(new.subject, new.body))
    drafted, draft_ms = await call(client, "/chat/completions", draft_request(new.subject, new.body))
    embedded, embed_ms = await call(client, "/embeddings", embed_request(new.subject, new.body))
    work = read_answers(classified, drafted, embedded, (classify_ms, draft_ms, embed_ms))
    saved = await run_in_threadpool(save, pool, new, work)
    if OPTION == "response-direct":
        # What the database gave back is trusted: built without validation, serialized by pydantic.
        return Response(Ticket.model_construct(**saved).model_dump_json(), 201, media_type="application/json")
    return saved


async def call(client: httpx.AsyncClient, path: str, body: dict) -> tuple[dict, float]:
    """POST to the provider: (answer, elapsed ms)."""
    started = time.perf_counter()
    response = await client.post(path, json=body)
    response.raise_for_status()
    return response.json(), (time.perf_counter() - started) * 1000


def customer_exists(pool: ConnectionPool, customer_id: int) -> bool:
    """True when the customer exists."""
    with pool.connection() as conn:
        return conn.execute("SELECT 1 FROM customers WHERE id = %s", (customer_id,)).fetchone() is not None


def save(pool: ConnectionPool, new: NewTicket, work: AiWork) -> dict:
    """The ticket and its AI results in one transaction; the saved ticket."""
    with pool.connection() as conn:
        saved = conn.execute(
            "INSERT INTO tickets (customer_id, subject, body) VALUES (%s, %s, %s) RETURNING id, created_at",
            (new.customer_id, new.subject, new.body),
        ).fetchone()
        assert saved is not None  # INSERT ... RETURNING gives the row it inserted
        ticket_id, created_at = saved
        # Each call's model, then its time, in the columns' order: classify, draft, embed.
        calls = [figure for op in ("classify", "draft", "embed") for figure in (work.models[op], work.elapsed_ms[op])]
        conn.execute(
            """INSERT INTO ticket_ai_results (ticket_id, category, priority, draft_reply, embedding,
               classify_model, classify_ms, draft_model, draft_ms, embed_model, embed_ms)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
            (ticket_id, work.category, work.priority, work.draft_reply, work.embedding, *calls),
            binary=OPTION == "binary-params",  # the embedding's 256 floats packed, rather than written as text
        )
    return {
        **new.model_dump(),
        "id": ticket_id,
        "created_at": created_at,
        "category": work.category,
        "priority": work.priority,
        "draft_reply": work.draft_reply,
    }
