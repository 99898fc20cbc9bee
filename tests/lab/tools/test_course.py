"""The course's published figures live in scripts/toolkit/reports/course.toml: the READMEs quote exactly those."""

from scripts.toolkit.cli import PROJECT_ROOT
from scripts.toolkit.reports import course_figures
from scripts.toolkit.reports.text import readable_ms
from scripts.toolkit.running.stack import MODES

READMES = "\n".join(path.read_text() for path in [PROJECT_ROOT / "README.md", *PROJECT_ROOT.glob("*/README.md")])


def course_columns(first_header: str) -> dict[str, list[str]]:
    """The cells right of `|` per mode, in the READMEs' output blocks whose course columns start with `first_header`."""
    found: dict[str, list[str]] = {}
    for block in READMES.split("```"):
        if f"|  {first_header}" not in block:
            continue
        for line in block.splitlines():
            mode, _, course_part = line.partition("|")
            if mode.split() and mode.split()[0] in MODES and course_part:
                found.setdefault(mode.split()[0], []).append(" ".join(course_part.split()))
    return found


def test_the_readmes_stall_figures_are_the_courses():
    quoted = course_columns("course: 8 tickets")
    assert set(quoted) == set(MODES)
    for mode, cells in quoted.items():
        figures = course_figures.stall(mode)
        expected = (
            f"{figures['total_s']:.1f} s {figures['health_answers']} "
            f"{readable_ms(figures['health_median_ms'])} {readable_ms(figures['health_slowest_ms'])}"
        )
        assert set(cells) == {expected}, mode


def test_the_readmes_locust_figures_are_the_courses():
    quoted = course_columns("course: tickets/s")
    assert set(quoted) == set(MODES)
    for mode, cells in quoted.items():
        figures = course_figures.locust(mode, 8)
        expected = f"{figures['tickets_per_s']:.2f} {figures['p50_ms']:,.1f} ms {figures['p95_ms']:,.1f} ms"
        assert set(cells) == {expected}, mode


def test_the_locust_figures_are_the_courses_only_at_its_number_of_users():
    assert course_figures.locust("async", 8) == {"tickets_per_s": 3.47, "p50_ms": 2146.6, "p95_ms": 2734.2}
    assert course_figures.locust("async", 32) is None
