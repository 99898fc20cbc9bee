"""A project's own test suite, run as a student runs it (`python -m pytest` in its folder): its count and failures,
read from pytest's own report of each test (`--junitxml`, written outside the project), not from its terminal.

`python -m scripts.snapshots` runs each snapshot's suite, `python -m scripts.check` a student's.
"""

import os
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from scripts.toolkit.running.commands import run_to_completion

SUITE_TIMEOUT_S = 900
# Nothing of the run is written into the project: no bytecode, no pytest cache; the report goes to a folder of ours.
NO_TRACES = {"PYTHONDONTWRITEBYTECODE": "1"}
PYTEST_OPTIONS = ["-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1"]  # xunit1: each test's file
# A test's outcome in the report: the element under its <testcase>; none is a pass.
OUTCOMES = {"failure": "failed", "error": "error", "skipped": "skipped"}
IN_SUMMARY = ("failed", "passed", "skipped", "xfailed", "error")  # in the order of pytest's own summary


@dataclass
class Case:
    """One test as pytest reported it: its id (`tests/test_x.py::test_y[param]`), its outcome, and the first line
    of its failure."""

    id: str
    outcome: str
    message: str = ""


@dataclass
class SuiteRun:
    """What `python -m pytest` found: a summary in pytest's words, the counts in it, and one line per failing test."""

    summary: str
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # "tests/test_x.py::test_y - the first line of the failure"

    def passed_exactly(self, expected: int) -> bool:
        """True when exactly `expected` tests ran and every one passed (no failure, error, skip or xfail)."""
        return self.counts == {"passed": expected}


def run_suite(project: Path, env: dict[str, str] | None = None, timeout_s: float = SUITE_TIMEOUT_S) -> SuiteRun:
    """Run `python -m pytest` in the project's folder, with `env` on top of this process's environment."""
    try:
        cases, seconds, result = _reported(project, [], env, timeout_s)
    except subprocess.TimeoutExpired:
        return SuiteRun(f"did not finish within {timeout_s:g} s")
    if cases is None:
        return SuiteRun(f"no report from pytest (exit {result.returncode}): {result.stderr.strip()[-300:]}")
    counts = Counter(case.outcome for case in cases)
    said = [
        f"{counts[word]} {word}" + "s" * (word == "error" and counts[word] > 1) for word in IN_SUMMARY if counts[word]
    ]
    summary = ", ".join(said) or "no tests ran"
    failing = [case for case in cases if case.outcome in ("failed", "error")]
    failures = [f"{case.id} - {case.message}" if case.message else case.id for case in failing]
    return SuiteRun(f"{summary} in {seconds:.2f}s", dict(counts), failures)


def collected_tests(project: Path, env: dict[str, str] | None = None, timeout_s: float = 120) -> list[str]:
    """The ids of the tests pytest finds in the project's folder (`tests/test_x.py::test_y[param]`), none run; none
    where pytest cannot start."""
    cases, _, _ = _reported(project, ["--setup-plan"], env, timeout_s)  # each test reported, nothing executed
    return [case.id for case in cases or []]


def _reported(
    project: Path, args: list[str], env: dict[str, str] | None, timeout_s: float
) -> tuple[list[Case] | None, float, subprocess.CompletedProcess]:
    """Run pytest with its JUnit report: the tests it reports (None without a report), its time, the process."""
    with tempfile.TemporaryDirectory(prefix="lab-pytest-") as folder:
        report = Path(folder) / "report.xml"
        argv = [sys.executable, "-m", "pytest", *PYTEST_OPTIONS, f"--junitxml={report}", *args]
        result = run_to_completion(argv, project, {**os.environ, **NO_TRACES, **(env or {})}, timeout_s)
        if not report.is_file():
            return None, 0.0, result
        suites = ElementTree.parse(report).getroot()
    seconds = sum(float(suite.get("time", 0)) for suite in suites.iter("testsuite"))
    return [_case(element) for element in suites.iter("testcase")], seconds, result


def _case(element: ElementTree.Element) -> Case:
    """A <testcase>: its id made as pytest makes it (the file, its classes, the name), its outcome and message."""
    file, classname = element.get("file", ""), element.get("classname", "")
    module = file.removesuffix(".py").replace("/", ".")
    classes = [name for name in classname[len(module) :].split(".") if name] if classname.startswith(module) else []
    test_id = "::".join([file, *classes, element.get("name", "")]) if classname else file  # a file that fails to load
    found = next((child for child in element if child.tag in OUTCOMES), None)
    if found is None:
        return Case(test_id, "passed")
    outcome = "xfailed" if found.get("type") == "pytest.xfail" else OUTCOMES[found.tag]
    return Case(test_id, outcome, (found.get("message") or "").strip().partition("\n")[0])
