"""The lab's data sets: seeded, so every machine loads exactly the same customers and tickets."""

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from simulator.embeddings import embed_text
from ticket_api.ai import CHAT_MODEL, EMBEDDING_DIMENSIONS, EMBEDDING_MODEL

SEED = 2026
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Size:
    """How many customers and historical tickets a data set has."""

    customers: int
    tickets: int


SIZES = {"small": Size(customers=300, tickets=3_000), "large": Size(customers=2_000, tickets=30_000)}
# Every data set starts with the small one's customers, so ids 1..300 always exist.
KNOWN_CUSTOMER_IDS = range(1, SIZES["small"].customers + 1)

FIRST_NAMES = [
    "Amira",
    "Ben",
    "Chloe",
    "Dario",
    "Elif",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Keiko",
    "Luca",
    "Maya",
    "Noah",
    "Olga",
    "Pavel",
    "Quinn",
    "Rosa",
    "Sami",
    "Tara",
    "Umar",
    "Vera",
    "Wen",
    "Yusuf",
]
LAST_NAMES = [
    "Adler",
    "Berg",
    "Costa",
    "Dumont",
    "Eriksen",
    "Fischer",
    "Garcia",
    "Haddad",
    "Ito",
    "Jansen",
    "Kowalski",
    "Lindqvist",
    "Moreau",
    "Novak",
    "Okafor",
    "Petrov",
    "Rossi",
    "Silva",
    "Tanaka",
    "Weber",
]
PLANS = ["free"] * 6 + ["pro"] * 3 + ["enterprise"]

SUBJECTS = {
    "billing": [
        "Refund for order {n}",
        "Invoice {n} charged twice",
        "Cannot update my card",
        "Wrong VAT on invoice {n}",
    ],
    "technical": ["Export to CSV fails", "App crashes on login", "Sync stuck at {n}%", "Error {n} when saving"],
    "account": [
        "Cannot reset my password",
        "Please merge my two accounts",
        "Change the owner of team {n}",
        "Two-factor code never arrives",
    ],
    "shipping": [
        "Parcel {n} has not arrived",
        "Wrong address on order {n}",
        "Package arrived damaged",
        "Tracking number {n} unknown",
    ],
    "general": [
        "Question about your roadmap",
        "Feedback on the new design",
        "Do you offer a student discount?",
        "Where can I find the API docs?",
    ],
}
BODIES = [
    "Hello, {subject_lower}. I tried again this morning and nothing changed. Could you look into it?",
    "Hi team, since last week: {subject_lower}. This blocks our work, please help soon.",
    "Good afternoon. {subject}. I attached nothing yet but can send screenshots. Thanks!",
    "{subject}. It happened twice today, on both my laptop and my phone. What should I do?",
]
PRIORITY_WEIGHTS = {"low": 2, "normal": 5, "high": 2, "urgent": 1}
MEDIAN_MS = {"classify": 910.0, "draft": 1100.0, "embed": 200.0}


def customers(size: Size, seed: int = SEED) -> Iterator[tuple]:
    """Rows (id, name, email, plan, created_at) for `size.customers` customers."""
    rng = random.Random(f"{seed}-customers")
    for customer_id in range(1, size.customers + 1):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        created_at = EPOCH - timedelta(days=rng.randint(30, 900))
        yield (
            customer_id,
            f"{first} {last}",
            f"{first}.{last}.{customer_id}@example.com".lower(),
            rng.choice(PLANS),
            created_at,
        )


def tickets(size: Size, seed: int = SEED) -> Iterator[tuple[tuple, tuple]]:
    """Pairs of rows (ticket, ai_result) for `size.tickets` historical tickets."""
    rng = random.Random(f"{seed}-tickets")
    for ticket_id in range(1, size.tickets + 1):
        category = rng.choice(list(SUBJECTS))
        subject = rng.choice(SUBJECTS[category]).format(n=rng.randint(100, 99999))
        body = rng.choice(BODIES).format(subject=subject, subject_lower=subject[0].lower() + subject[1:])
        created_at = EPOCH + timedelta(minutes=ticket_id * 525_600 // size.tickets)
        priority = rng.choices(list(PRIORITY_WEIGHTS), weights=list(PRIORITY_WEIGHTS.values()))[0]
        reply = f'Hi, thank you for writing to us about "{subject}". We are looking into it and will get back to you.'
        elapsed = {op: median * rng.lognormvariate(0, 0.25) for op, median in MEDIAN_MS.items()}
        ticket = (ticket_id, rng.randint(1, size.customers), subject, body, created_at)
        result = (
            ticket_id,
            category,
            priority,
            reply,
            embed_text(f"{subject}\n\n{body}", EMBEDDING_DIMENSIONS),
            CHAT_MODEL,
            elapsed["classify"],
            CHAT_MODEL,
            elapsed["draft"],
            EMBEDDING_MODEL,
            elapsed["embed"],
            created_at,
        )
        yield ticket, result


def random_ticket(rng: random.Random) -> dict:
    """A new ticket from a customer of every data set, with a realistic subject and body."""
    category = rng.choice(list(SUBJECTS))
    subject = rng.choice(SUBJECTS[category]).format(n=rng.randint(100, 99999))
    body = rng.choice(BODIES).format(subject=subject, subject_lower=subject[0].lower() + subject[1:])
    return {"customer_id": rng.choice(KNOWN_CUSTOMER_IDS), "subject": subject, "body": body}
