"""What the API accepts and answers."""

import hashlib
from datetime import datetime
from typing import Annotated

import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints

# Strict: a JSON `true` or `"1"` is not customer 1 (pydantic would convert both).
DbId = Annotated[int, Field(ge=1, le=2**63 - 1, strict=True)]
# PostgreSQL text cannot hold NUL characters: refused here (422), not by the INSERT after the AI work (500).
NO_NUL = r"^[^\x00]*$"
Subject = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200, pattern=NO_NUL)]
Body = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=5000, pattern=NO_NUL)]


class NewTicket(BaseModel):
    """The body of POST /v1/tickets."""

    model_config = ConfigDict(extra="forbid")

    customer_id: DbId
    subject: Subject
    body: Body
    _idempotency_key: str | None = PrivateAttr(None)

    @property
    def idempotency_key(self) -> str | None:
        """The request's Idempotency-Key header, if it had one."""
        return self._idempotency_key

    def keyed(self, idempotency_key: str | None) -> "NewTicket":
        """A copy that carries the request's Idempotency-Key."""
        copy = self.model_copy()
        copy._idempotency_key = idempotency_key
        return copy

    def fingerprint(self) -> str:
        """A hash of what was asked, to tell a retry from a different request under the same key."""
        return hashlib.sha256(orjson.dumps([self.customer_id, self.subject, self.body])).hexdigest()


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
