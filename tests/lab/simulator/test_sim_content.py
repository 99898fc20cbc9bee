"""Chat answers: classifications within the caller's enums, replies that name the subject, determinism."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.content import DEFAULT_CATEGORIES, DEFAULT_PRIORITIES, classify_text, draft_reply, subject_of
from tests.lab.simulator.sim_testing import chat_body

enum_values = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=6, unique=True)


@settings(max_examples=200, database=None, deadline=None)
@given(text=st.text(max_size=300), categories=enum_values, priorities=enum_values, seed=st.integers(0, 10**6))
def test_a_classification_always_stays_within_the_enums(text, categories, priorities, seed):
    answer = classify_text(text, seed, tuple(categories), tuple(priorities))
    assert answer["category"] in categories
    assert answer["priority"] in priorities


def test_keywords_pick_the_matching_category_of_the_callers_enum():
    categories = ("general_question", "billing_and_payments", "technical_issue", "account_access", "delivery")
    assert classify_text("I want a refund for this invoice", 1, categories)["category"] == "billing_and_payments"
    assert classify_text("The app crashes with an error", 1, categories)["category"] == "technical_issue"
    assert classify_text("I forgot my password and cannot log in", 1, categories)["category"] == "account_access"
    assert classify_text("My parcel tracking has not moved", 1, categories)["category"] == "delivery"
    assert classify_text("Site is down, urgent!", 1)["priority"] == "urgent"


def test_without_a_schema_the_default_enums_are_used(http):
    answer = http.post("/v1/chat/completions", json=chat_body("classify", text="Subject: Invoice\n\nWrong VAT."))
    classification = json.loads(answer.json()["choices"][0]["message"]["content"])
    assert classification["category"] == "billing"
    assert classification["priority"] in DEFAULT_PRIORITIES
    assert set(DEFAULT_CATEGORIES) == {"billing", "technical", "account", "shipping", "general"}


def test_the_header_chooses_the_operation_and_unmarked_calls_are_drafts(http):
    unmarked = http.post("/v1/chat/completions", json=chat_body(None))
    assert unmarked.headers["x-sim-operation"] == "draft"
    by_header = http.post("/v1/chat/completions", json=chat_body("draft"), headers={"X-Sim-Operation": "classify"})
    assert by_header.headers["x-sim-operation"] == "classify"
    assert set(json.loads(by_header.json()["choices"][0]["message"]["content"])) == {"category", "priority"}


def test_a_draft_names_the_subject_line():
    reply = draft_reply("Subject: Printer makes noise\n\nIt clicks all night.", seed=3)
    assert '"Printer makes noise"' in reply
    assert len(reply.split(". ")) >= 3  # a few sentences, not a stub


def test_the_subject_is_the_subject_line_or_else_the_first_line():
    assert subject_of("Hello\nSubject: Broken hinge\n\nbody") == "Broken hinge"
    assert subject_of("\n  First line here  \nsecond") == "First line here"
    assert subject_of("") == "your request"


def test_answers_are_fixed_by_seed_and_text():
    texts = [f"Subject: Question {number}\n\nSomething about item {number}." for number in range(20)]
    first = [(draft_reply(text, 1), classify_text(text, 1)) for text in texts]
    assert first == [(draft_reply(text, 1), classify_text(text, 1)) for text in texts]
    assert first != [(draft_reply(text, 2), classify_text(text, 2)) for text in texts]


def test_two_simulators_with_one_seed_answer_and_replay_alike(server_factory):
    """Same seed: the same answers and the same sequence of replayed latencies; another seed differs."""
    runs = []
    for seed in ("21", "21", "22"):
        sim = server_factory("--speed", "0", "--quota", "0", "--seed", seed)
        with sim.client() as client:
            answers = [
                client.post("/v1/chat/completions", json=chat_body(operation, text=f"Subject: S{number}\n\nb"))
                for number in range(10)
                for operation in ("classify", "draft")
            ]
        runs.append(
            [
                (answer.json()["choices"][0]["message"]["content"], answer.headers["x-sim-replayed-ms"])
                for answer in answers
            ]
        )
        sim.stop()
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
