"""The lab's own tests: the marker `timing`, on each test whose verdict depends on how long something took."""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Declare `timing` (markers are strict): `python -m scripts.busy -- python -m pytest tests/lab -m timing`."""
    config.addinivalue_line(
        "markers",
        "timing: its verdict depends on how long something took; it passes 20 runs in a row on a busy machine",
    )
