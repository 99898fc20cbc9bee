"""Reading tickets: plain `def` routes, which FastAPI runs in its thread pool (psycopg here waits)."""

from typing import Annotated

from fastapi import APIRouter, Path, Query

from ticket_api.deps import DbDep, TimerDep
from ticket_api.errors import TicketNotFound
from ticket_api.instruments.error_answers import documented
from ticket_api.models import Ticket, TicketPage
from ticket_api.repository import get_ticket, list_tickets

router = APIRouter()
MAX_ID = 2**63 - 1


@router.get("/v1/tickets/{ticket_id}", response_model=Ticket, responses=documented(404, 422, 503))
def read_ticket(ticket_id: Annotated[int, Path(ge=1, le=MAX_ID)], db: DbDep, timer: TimerDep) -> Ticket:
    """One ticket with its AI results."""
    with timer("db"):
        ticket = get_ticket(db, ticket_id)
    if ticket is None:
        raise TicketNotFound(f"ticket {ticket_id} does not exist")
    return ticket


@router.get("/v1/tickets", response_model=TicketPage, responses=documented(422, 503))
def read_tickets(
    db: DbDep,
    timer: TimerDep,
    customer_id: Annotated[int, Query(ge=1, le=MAX_ID)],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    after: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> TicketPage:
    """A customer's tickets, oldest first, `limit` per page; `next_after` points to the next page."""
    with timer("db"):
        tickets = list_tickets(db, customer_id, limit, after)
    return TicketPage(tickets=tickets, next_after=tickets[-1].id if len(tickets) == limit else None)
