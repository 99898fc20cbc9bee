"""The soak's tickets and its audit of PostgreSQL: each ticket's journey, then every row set against the answers by
the rules scripts/soak.py states."""

import random
import re
from collections import Counter
from dataclasses import dataclass, field

from scripts.toolkit import dataset
from scripts.toolkit.measure.database_state import saved_tickets

MARKER = re.compile(r"\[(soak-[0-9a-f]+-\d+)\]$")


@dataclass
class Journey:
    """One ticket's journey: its final answer, and what happened on the way."""

    number: int
    marker: str
    status: int | None = None
    error: str | None = None
    ticket_id: int | None = None
    connection_errors: list[str] = field(default_factory=list)
    in_flight_at_restart: bool = False
    sent_at: float = 0.0  # wall-clock time the answered attempt was sent, to compare with the row's created_at


def make_tickets(count: int, seed: str) -> list[dict]:
    """Random tickets, each with a marker at the end of its subject and the marker as Idempotency-Key."""
    rng = random.Random(seed)
    run_id = f"{rng.getrandbits(32):08x}"
    tickets = []
    for number in range(1, count + 1):
        ticket, marker = dataset.random_ticket(rng), f"soak-{run_id}-{number}"
        tickets.append({**ticket, "subject": f"{ticket['subject']} [{marker}]", "key": marker})
    return tickets


def check_rows(dsn: str, outcomes: list[Journey]) -> dict:
    """Compare the answers with the rows in PostgreSQL: the counts, and every violation as one line."""
    rows = saved_tickets(dsn)
    saved: dict[str, list[int]] = {}
    created_at = {ticket_id: created for ticket_id, _, _, created in rows}
    violations = [f"ticket {ticket_id} has no AI results" for ticket_id, _, complete, _ in rows if not complete]
    for ticket_id, subject, _, _ in rows:
        found = MARKER.search(subject)
        if found is None:
            violations.append(f"ticket {ticket_id} has no soak marker: {subject!r}")
        else:
            saved.setdefault(found.group(1), []).append(ticket_id)
    for marker in sorted(set(saved) - {outcome.marker for outcome in outcomes}):
        violations.append(f"{marker}: tickets {saved[marker]} of a ticket never sent")
    saved_unanswered, returned_on_retry = [], []
    for outcome in outcomes:
        ids = saved.get(outcome.marker, [])
        if len(ids) > 1:
            violations.append(f"{outcome.marker}: saved {len(ids)} times, ids {ids}")
        if outcome.status == 201 and ids != [outcome.ticket_id]:
            saved_as = ids or "nothing"
            violations.append(f"{outcome.marker}: answered 201 with id {outcome.ticket_id}, saved as {saved_as}")
        elif outcome.status == 201 and created_at[ids[0]] < outcome.sent_at:
            returned_on_retry.append(outcome.marker)  # committed before the attempt that got the 201 was sent
        elif outcome.status != 201 and ids:
            if outcome.in_flight_at_restart or outcome.connection_errors:
                saved_unanswered.append(outcome.marker)
            else:
                violations.append(f"{outcome.marker}: answered {outcome.status} {outcome.error}, yet saved as {ids}")
    return {
        "rows": len(rows),
        "complete_rows": sum(1 for row in rows if row[2]),
        "duplicates": sum(len(ids) - 1 for ids in saved.values()),
        "committed_without_201": returned_on_retry,
        "saved_without_201": saved_unanswered,
        "violations": violations,
    }


def mode_figures(mode: str, outcomes: list[Journey], restart_info: dict, checked: dict) -> dict:
    """Every figure of one mode's run, as printed by --json."""
    answers = Counter(str(o.status) if o.status == 201 else f"{o.status or 'no answer'} {o.error}" for o in outcomes)
    connection_errors = Counter(name for o in outcomes for name in o.connection_errors)
    return {
        "mode": mode,
        "sent": len(outcomes),
        "created": answers.get("201", 0),
        "answers": dict(sorted(answers.items())),
        "connection_errors": dict(connection_errors),
        "tickets_retried": sum(1 for o in outcomes if o.connection_errors),
        "restart": restart_info,
        **checked,
    }
