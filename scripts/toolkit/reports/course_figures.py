"""The course's published figures (course.toml), for compare and capacity."""

import tomllib
from functools import cache
from pathlib import Path

FIGURES_FILE = Path(__file__).with_name("course.toml")


@cache
def published() -> dict:
    """course.toml as a dict: `stall` and `locust`, each with one table per INTAKE_MODE."""
    return tomllib.loads(FIGURES_FILE.read_text())


def stall(mode: str) -> dict:
    """The course's scripts.stall figures of one mode: total_s, health_answers, health_median_ms, health_slowest_ms."""
    return dict(published()["stall"][mode])


def locust(mode: str, users: int) -> dict | None:
    """The course's Locust figures of one mode (tickets_per_s, p50_ms, p95_ms), or None at another number of users."""
    table = published()["locust"]
    return dict(table[mode]) if users == table["users"] else None
