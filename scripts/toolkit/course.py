"""The course's published figures (course.toml), for compare, capacity and the docs."""

import tomllib
from functools import cache
from pathlib import Path

from scripts.toolkit.cli import readable_ms

FIGURES_FILE = Path(__file__).with_name("course.toml")
MODES = ("blocking", "async", "thread")


@cache
def figures() -> dict:
    """course.toml as a dict: `stall` and `locust`, each with one table per INTAKE_MODE."""
    return tomllib.loads(FIGURES_FILE.read_text())


def stall(mode: str) -> dict:
    """The course's scripts.stall figures of one mode: total_s, health_answers, health_median_ms, health_slowest_ms."""
    return dict(figures()["stall"][mode])


def locust(mode: str, users: int) -> dict | None:
    """The course's Locust figures of one mode (tickets_per_s, p50_ms, p95_ms), or None at another number of users."""
    table = figures()["locust"]
    return dict(table[mode]) if users == table["users"] else None


def markdown() -> str:
    """The course's figures as two markdown tables, for the docs."""
    stall_table, locust_table = figures()["stall"], figures()["locust"]
    lines = [
        f"`python -m scripts.stall` (8 tickets, 4 at a time), median of {stall_table['passes']} passes:",
        "",
        "| INTAKE_MODE | 8 tickets | /health answers | median | slowest |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{mode}` | {row['total_s']:.1f} s | {row['health_answers']} | "
        f"{readable_ms(row['health_median_ms'])} | {readable_ms(row['health_slowest_ms'])} |"
        for mode in MODES
        for row in [stall_table[mode]]
    ]
    lines += [
        "",
        f"Locust, {locust_table['users']} users for {locust_table['duration_s']} s, median of "
        f"{locust_table['passes']} passes:",
        "",
        "| INTAKE_MODE | tickets/s | p50 | p95 |",
        "| --- | --- | --- | --- |",
    ]
    lines += [
        f"| `{mode}` | {row['tickets_per_s']:.2f} | {row['p50_ms']:,.1f} ms | {row['p95_ms']:,.1f} ms |"
        for mode in MODES
        for row in [locust_table[mode]]
    ]
    return "\n".join(lines) + "\n"
