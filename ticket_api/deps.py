"""Named dependencies, so route signatures read like sentences.

They are `async def` on purpose: FastAPI would send a plain `def` dependency to the thread pool,
spending one of its tokens just to read an attribute.
"""

from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.exceptions import RequestValidationError

from ticket_api.database import Database
from ticket_api.instruments.requestlog import Timer, current_timer
from ticket_api.models import NewTicket
from ticket_api.provider import Provider


async def get_db(request: Request) -> Database:
    """The process's database (pool), made in the lifespan."""
    return request.app.state.db


async def get_provider(request: Request) -> Provider:
    """The process's provider clients, made in the lifespan."""
    return request.app.state.provider


async def get_timer() -> Timer:
    """This request's timer (made by the request log)."""
    return current_timer.get() or Timer()


IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=1,
        max_length=255,
        pattern=r"^[\x21-\x7e]+$",
        description="Send the same key again to get the first ticket back instead of a second one.",
    ),
]


async def read_new_ticket(request: Request, ticket: NewTicket, idempotency_key: IdempotencyKey = None) -> NewTicket:
    """The new ticket from the request body (JSON in UTF-8), with the request's Idempotency-Key."""
    if b"\x00" in await request.body():
        # JSON in UTF-8 never holds a NUL byte (it writes \u0000): this body is UTF-16 or UTF-32, which
        # json.loads reads as well. The API takes UTF-8 only, as the README says.
        problem = {"loc": ("body",), "msg": "the body is not JSON in UTF-8", "type": "json_invalid"}
        raise RequestValidationError([problem])
    return ticket.keyed(idempotency_key)


DbDep = Annotated[Database, Depends(get_db)]
ProviderDep = Annotated[Provider, Depends(get_provider)]
TimerDep = Annotated[Timer, Depends(get_timer)]
NewTicketDep = Annotated[NewTicket, Depends(read_new_ticket)]
