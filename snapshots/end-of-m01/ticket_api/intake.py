"""POST /v1/tickets: a plain `def` endpoint, so FastAPI runs it in its thread pool."""

from fastapi import APIRouter

from ticket_api.deps import DbDep, NewTicketDep, ProviderDep, TimerDep
from ticket_api.instruments.error_answers import documented
from ticket_api.models import Ticket
from ticket_api.repository import create_in_one_transaction, find_earlier_ticket

router = APIRouter()


@router.post("/v1/tickets", status_code=201, response_model=Ticket, responses=documented(404, 413, 422, 502, 503, 504))
def create_ticket(new: NewTicketDep, db: DbDep, provider: ProviderDep, timer: TimerDep) -> Ticket:
    """Create a ticket: check the customer, do the AI work, save the ticket with its results."""
    if new.idempotency_key is not None:
        with timer("db"):
            earlier = find_earlier_ticket(db, new)
        if earlier is not None:
            return earlier  # a retry: the first answer again, without new AI work
    ticket, work = create_in_one_transaction(db, provider, new, timer)
    return ticket
