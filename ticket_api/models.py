"""What the API accepts and answers."""

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

DbId = Annotated[int, Field(ge=1, le=2**63 - 1)]
Subject = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Body = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=5000)]


class NewTicket(BaseModel):
    """The body of POST /v1/tickets."""

    model_config = ConfigDict(extra="forbid")

    customer_id: DbId
    subject: Subject
    body: Body


class Ticket(BaseModel):
    """A saved ticket with the AI's category, priority and drafted reply."""

    id: int
    customer_id: int
    subject: str
    body: str
    category: str
    priority: str
    draft_reply: str
    created_at: datetime


class TicketPage(BaseModel):
    """One page of a customer's tickets, oldest first; pass `next_after` as `after` for the next page."""

    tickets: list[Ticket]
    next_after: int | None
