"""The lab's own tests: the markers `timing`, on each test whose verdict depends on how long something took, and
`uvloop`, on each that needs uvloop (.ci/run runs them where it is installed; the student's install leaves it out)."""

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Declare the markers (they are strict): `python -m scripts.busy -- python -m pytest tests/lab -m timing`."""
    config.addinivalue_line(
        "markers",
        "timing: its verdict depends on how long something took; it passes 20 runs in a row on a busy machine",
    )
    config.addinivalue_line("markers", "uvloop: it needs uvloop, which the student's install leaves out")
