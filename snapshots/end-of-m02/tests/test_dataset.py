"""The seeded data sets: the same rows on every machine, and rows the schema accepts."""

import math

from scripts.toolkit import dataset
from ticket_api.ai import CATEGORIES, PRIORITIES

TINY = dataset.Size(customers=30, tickets=200)


def test_the_same_seed_gives_the_same_rows():
    assert list(dataset.customers(TINY)) == list(dataset.customers(TINY))
    assert [t for t, _ in dataset.tickets(TINY)] == [t for t, _ in dataset.tickets(TINY)]


def test_customers_have_ids_one_to_n_and_unique_emails():
    rows = list(dataset.customers(TINY))
    assert [row[0] for row in rows] == list(range(1, 31))
    assert len({row[2] for row in rows}) == 30


def test_every_data_set_contains_the_known_customers():
    assert all(size.customers >= len(dataset.KNOWN_CUSTOMER_IDS) for size in dataset.SIZES.values())


def test_tickets_belong_to_existing_customers_and_have_valid_labels():
    for ticket, result in dataset.tickets(TINY):
        assert 1 <= ticket[1] <= TINY.customers
        assert result[1] in CATEGORIES and result[2] in PRIORITIES
        assert ticket[2] in result[3]  # the drafted reply mentions the subject


def test_embeddings_are_unit_vectors_of_256():
    _, result = next(dataset.tickets(TINY))
    embedding = result[4]
    assert len(embedding) == 256
    assert math.isclose(math.sqrt(sum(x * x for x in embedding)), 1.0, rel_tol=1e-6)
