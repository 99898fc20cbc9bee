"""POST /v1/tickets: where the API waits for the AI provider, in one of three ways (INTAKE_MODE)."""

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from ticket_api.ai import AiWork, classify_request, do_ai_work, draft_request, embed_request, read_answers
from ticket_api.deps import DbDep, NewTicketDep, ProviderDep, TimerDep
from ticket_api.instruments.error_answers import documented
from ticket_api.instruments.requestlog import Timer
from ticket_api.models import Ticket
from ticket_api.repository import check_customer, create_in_one_transaction, find_earlier_ticket, save_new_ticket

router = APIRouter()


@router.post("/v1/tickets", status_code=201, response_model=Ticket, responses=documented(404, 413, 422, 502, 503, 504))
async def create_ticket(
    request: Request, new: NewTicketDep, db: DbDep, provider: ProviderDep, timer: TimerDep
) -> Ticket:
    """Create a ticket: check the customer, do the AI work, save the ticket with its results."""
    if new.idempotency_key is not None:
        with timer("db"):
            earlier = await run_in_threadpool(find_earlier_ticket, db, new)
        if earlier is not None:
            return earlier  # a retry: the first answer again, without new AI work
    mode = request.app.state.settings.intake_mode
    if mode == "thread":
        ticket, work = await run_in_threadpool(create_in_one_transaction, db, provider, new, timer)
    else:
        with timer("db"):
            await run_in_threadpool(check_customer, db, new.customer_id)
        if mode == "blocking":
            # A mistake, on purpose: the waiting client inside an async endpoint.
            work = do_ai_work(provider, new.subject, new.body, timer)
        else:
            work = await do_ai_work_async(provider, new.subject, new.body, timer)
        with timer("db"):
            ticket = await run_in_threadpool(save_new_ticket, db, new, work)
    return ticket


async def do_ai_work_async(provider, subject: str, body: str, timer: Timer) -> AiWork:
    """ai.do_ai_work's three calls with await provider.acall(): while one waits, the event loop serves others."""
    with timer("ai"):
        classified, classify_ms = await provider.acall("/chat/completions", classify_request(subject, body))
        drafted, draft_ms = await provider.acall("/chat/completions", draft_request(subject, body))
        embedded, embed_ms = await provider.acall("/embeddings", embed_request(subject, body))
    return read_answers(classified, drafted, embedded, (classify_ms, draft_ms, embed_ms))
