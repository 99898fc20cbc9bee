"""The rows of the serialization experiment: the same ones every time, so the routes differ only in how they send."""

from datetime import UTC, datetime, timedelta
from functools import lru_cache

from pydantic import BaseModel


class LabRow(BaseModel):
    """One row of the serialization experiment, shaped like a ticket summary."""

    id: int
    customer_id: int
    subject: str
    status: str
    priority: str
    created_at: datetime


@lru_cache(maxsize=8)
def sample_rows(count: int) -> list[dict]:
    """The same `count` rows every time, built once: the routes differ only in how they serialize."""
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    return [
        {
            "id": i,
            "customer_id": 1 + i % 300,
            "subject": f"Invoice question number {i}",
            "status": "open",
            "priority": ("low", "normal", "high")[i % 3],
            "created_at": start + timedelta(minutes=7 * i),
        }
        for i in range(1, count + 1)
    ]
