"""The text of chat answers: a classification within the caller's enums, or a support reply.

Both are deterministic for a seed and an input: the same ticket always gets the same answer.
"""

import hashlib
import random
import re

DEFAULT_CATEGORIES = ("billing", "technical", "account", "shipping", "general")
DEFAULT_PRIORITIES = ("low", "normal", "high", "urgent")
WORD = re.compile(r"[a-z0-9']+")

# topic -> (words in a ticket that point to it, pieces of a category name that mean it)
TOPICS = {
    "billing": (
        {
            "refund",
            "refunds",
            "invoice",
            "invoices",
            "charge",
            "charged",
            "charges",
            "payment",
            "paid",
            "billing",
            "bill",
            "billed",
            "price",
            "subscription",
            "receipt",
            "overcharged",
            "vat",
            "card",
        },
        ("bill", "pay", "invoice", "refund", "financ", "charge"),
    ),
    "technical": (
        {
            "error",
            "errors",
            "bug",
            "crash",
            "crashes",
            "crashed",
            "broken",
            "fails",
            "failed",
            "failing",
            "install",
            "api",
            "slow",
            "timeout",
            "outage",
            "down",
            "sync",
            "app",
            "freezes",
            "update",
        },
        ("tech", "bug", "defect", "engineer", "incident", "software"),
    ),
    "account": (
        {"password", "login", "log", "sign", "account", "username", "email", "2fa", "locked", "profile"},
        ("account", "login", "access", "auth", "profile", "user"),
    ),
    "shipping": (
        {
            "delivery",
            "delivered",
            "shipping",
            "shipped",
            "package",
            "parcel",
            "tracking",
            "courier",
            "arrived",
            "order",
            "address",
            "delayed",
            "lost",
        },
        ("ship", "deliver", "logistic", "order", "fulfil"),
    ),
}
# level -> (words in a ticket that point to it, pieces of a priority name that mean it)
URGENCY = {
    "urgent": (
        {"urgent", "urgently", "asap", "immediately", "critical", "emergency", "outage", "down"},
        ("urgent", "critical", "highest", "p1", "blocker", "emergency"),
    ),
    "high": ({"important", "soon", "still", "twice", "again", "frustrated", "unacceptable"}, ("high", "p2", "major")),
    "low": (
        {"question", "wondering", "curious", "whenever", "suggestion", "feedback", "idea"},
        ("low", "minor", "p4", "trivial"),
    ),
}


def ticket_random(seed: int, text: str) -> random.Random:
    """A random generator fixed by the seed and the text (stable across processes, unlike hash())."""
    digest = hashlib.blake2b(f"{seed}\x00{text}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def classify_text(text: str, seed: int, categories=DEFAULT_CATEGORIES, priorities=DEFAULT_PRIORITIES) -> dict:
    """{"category", "priority"} for a ticket: keyword hints first, else a seeded pick within the enums."""
    words = set(WORD.findall(text.lower()))
    rng = ticket_random(seed, text)
    category = _hinted_value(words, categories, TOPICS) or rng.choice(list(categories))
    priority = _hinted_value(words, priorities, URGENCY) or rng.choice(list(priorities))
    return {"category": category, "priority": priority}


def _hinted_value(words: set[str], allowed, hints: dict) -> str | None:
    """The allowed value whose name fits the hint the ticket's words point to most, or None."""
    scores = sorted(((len(words & hint_words), name) for name, (hint_words, _) in hints.items()), reverse=True)
    for score, name in scores:
        if score == 0:
            break
        pieces = hints[name][1]
        match = next((value for value in allowed if any(piece in value.lower() for piece in pieces)), None)
        if match is not None:
            return match
    return None


def subject_of(text: str) -> str:
    """The ticket's subject: the line starting with `Subject:`, else the first non-empty line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.lower().startswith("subject:"):
            return line[len("subject:") :].strip() or "your request"
    return lines[0][:120] if lines else "your request"


OPENINGS = ("Hello,", "Hi there,", "Dear customer,", "Good day,")
ACKNOWLEDGEMENTS = {
    "billing": (
        "I am sorry about the trouble with your payment.",
        "I understand how annoying an unexpected charge is.",
    ),
    "technical": ("I am sorry the product is not working as it should.", "Thank you for the details of the error."),
    "account": ("I understand how frustrating it is to be locked out.", "Keeping your account safe matters to us."),
    "shipping": ("I am sorry your order has not reached you yet.", "I understand you are waiting for your delivery."),
    "general": ("Thank you for taking the time to write to us.", "We are glad you reached out."),
}
NEXT_STEPS = {
    "billing": (
        "I have asked our billing team to check the charges on your account.",
        "I have opened a review of the payment, and any amount charged in error will be refunded.",
    ),
    "technical": (
        "I have passed the details to our engineers so they can reproduce the problem.",
        "Please try signing out and in again; meanwhile our technical team is looking into it.",
    ),
    "account": (
        "I have sent a fresh link to the address on file so you can regain access.",
        "Our account team will verify the change and confirm by email.",
    ),
    "shipping": (
        "I have asked the carrier for the latest tracking status of your parcel.",
        "If the parcel does not move within two working days, we will send a replacement.",
    ),
    "general": ("I have shared your message with the right team.", "A colleague will look into this for you."),
}
CLOSINGS = (
    "We will get back to you within one business day.",
    "You will hear from us again shortly.",
    "Please reply to this message if anything else comes up.",
)
SIGNERS = ("Alex", "Sam", "Jordan", "Robin", "Taylor")


def draft_reply(text: str, seed: int) -> str:
    """A short, plausible support reply that names the ticket's subject."""
    subject = subject_of(text)
    rng = ticket_random(seed, text)
    topic = _hinted_value(set(WORD.findall(text.lower())), tuple(TOPICS), TOPICS) or "general"
    return (
        f'{rng.choice(OPENINGS)}\n\nThank you for contacting us about "{subject}". '
        f"{rng.choice(ACKNOWLEDGEMENTS[topic])} {rng.choice(NEXT_STEPS[topic])} {rng.choice(CLOSINGS)}"
        f"\n\nBest regards,\n{rng.choice(SIGNERS)}, Customer Support"
    )


def estimate_tokens(text: str) -> int:
    """A token count estimate: about four characters per token, at least one."""
    return max(1, (len(text) + 3) // 4)
