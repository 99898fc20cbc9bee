"""A project's own test suite, run as a student runs it (`python -m pytest` in its folder): its count and failures.

`python -m scripts.snapshots` runs each snapshot's suite, `python -m scripts.check` a student's.
"""

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from scripts.toolkit.running.commands import run_to_completion

SUITE_TIMEOUT_S = 900
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)")
SINGULAR = {"errors": "error", "warnings": "warning"}  # a count's word, whatever the number
# pytest's short summary (-rfE): "FAILED tests/test_x.py::test_y - AssertionError: ...", "ERROR tests/test_z.py - ..."
SHORT_SUMMARY = re.compile(r"^(FAILED|ERROR) (\S+)(?: - (.*))?$")
# Nothing of the run is written into the project: no bytecode, no pytest cache.
NO_TRACES = {"PYTHONDONTWRITEBYTECODE": "1"}


@dataclass
class SuiteRun:
    """What `python -m pytest` said: its last line, the counts in it, and one line per failing test."""

    summary: str
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # "tests/test_x.py::test_y - the first line of the failure"

    def passed_exactly(self, expected: int) -> bool:
        """True when pytest printed exactly `N passed` and nothing else (no failure, skip or warning)."""
        return self.counts == {"passed": expected}


def run_suite(project: Path, env: dict[str, str] | None = None, timeout_s: float = SUITE_TIMEOUT_S) -> SuiteRun:
    """Run `python -m pytest` in the project's folder, with `env` on top of this process's environment."""
    try:
        result = _pytest(project, ["-q", "-rfE", "-p", "no:cacheprovider"], env, timeout_s)
    except subprocess.TimeoutExpired:
        return SuiteRun(f"did not finish within {timeout_s:g} s")
    lines = [line.strip("= ") for line in result.stdout.splitlines() if line.strip()]
    if not lines:
        return SuiteRun(f"no output (exit {result.returncode}): {result.stderr.strip()[-300:]}")
    summary = lines[-1]
    counts = {SINGULAR.get(word, word): int(number) for number, word in COUNT.findall(summary)}
    summaries = [SHORT_SUMMARY.match(line) for line in lines]
    failures = [f"{match[2]} - {match[3]}" if match[3] else match[2] for match in summaries if match]
    return SuiteRun(summary, counts, failures)


def collected_tests(project: Path, env: dict[str, str] | None = None, timeout_s: float = 120) -> list[str]:
    """The ids of the tests pytest collects in the project's folder (`tests/test_x.py::test_y[param]`)."""
    result = _pytest(project, ["-q", "--collect-only", "-p", "no:cacheprovider"], env, timeout_s)
    return [line.strip() for line in result.stdout.splitlines() if "::" in line and not line.startswith(" ")]


def _pytest(
    project: Path, args: list[str], env: dict[str, str] | None, timeout_s: float
) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "pytest", *args]
    return run_to_completion(argv, project, {**os.environ, **NO_TRACES, **(env or {})}, timeout_s)
