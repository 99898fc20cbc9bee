"""The lesson snapshots keep the course's promises: `python -m scripts.snapshots check` in the suite."""

import subprocess
import sys

import pytest

from scripts.toolkit.cli import PROJECT_ROOT as ROOT
from scripts.toolkit.lessons.references import missing_references
from scripts.toolkit.lessons.snapshots_readme import copy_commands
from scripts.toolkit.lessons.spec import load_lessons, shape_problems
from scripts.toolkit.lessons.student_files import student_files, unused_files
from scripts.toolkit.lessons.unused_names import unused_names


def test_shapes_compare_lists_bounds_and_scaled_bounds():
    figures = {"statuses": [201], "health_median_ms": 400.0, "total_s": 3.0}
    assert shape_problems(figures, {"statuses": [201], "total_s": "< 7.5 scaled"}, speed=0.5) == []
    assert shape_problems(figures, {"health_median_ms": "> 1000 scaled"}, speed=0.5) == [
        "health_median_ms is 400.0, expected > 500"
    ]
    assert shape_problems(figures, {"statuses": [201, 503]}, speed=1) == ["statuses is [201], expected [201, 503]"]
    assert shape_problems({}, {"total_s": "< 1"}, speed=1) == ["total_s is None, expected < 1"]


def test_shapes_compare_inclusive_bounds_and_ranges():
    figures = {"health_answers": 4, "health_median_ms": 1000.0, "total_s": 4.4}
    assert (
        shape_problems(
            figures,
            {"health_answers": "3 to 4", "health_median_ms": ">= 3000 scaled", "total_s": "15 to 22 scaled"},
            speed=0.2,
        )
        == []
    )
    for answers in (2, 5):
        assert shape_problems({"health_answers": answers}, {"health_answers": "3 to 4"}, speed=0.2) == [
            f"health_answers is {answers}, expected 3 to 4"
        ]
    assert shape_problems(figures, {"total_s": "15 to 22 scaled"}, speed=1) == ["total_s is 4.4, expected 15 to 22"]
    assert shape_problems(figures, {"health_answers": ">= 40"}, speed=1) == ["health_answers is 4, expected >= 40"]
    assert shape_problems(figures, {"health_median_ms": "<= 999"}, speed=1) == [
        "health_median_ms is 1000.0, expected <= 999"
    ]


def test_a_students_scripts_are_the_lessons_and_what_they_import_and_a_file_nothing_uses_is_found(tmp_path):
    files = {
        "ticket_api/__init__.py": "",
        "ticket_api/main.py": "def create():\n    from ticket_api.used import thing  # imported inside a function\n",
        "ticket_api/used.py": "thing = 1\n",
        "ticket_api/orphan.py": "nobody = 1\n",
        "ticket_api/README.md": "the lab's notes\n",
        "simulator/__init__.py": "",
        "simulator/__main__.py": "from simulator import app\n",
        "simulator/app.py": "",
        "simulator/generate.py": 'if __name__ == "__main__":\n    pass\n',
        "scripts/__init__.py": "",
        "scripts/db.py": "from scripts.toolkit import cli\n",
        "scripts/bench.py": "from scripts.toolkit import load\n",
        "scripts/toolkit/__init__.py": "",
        "scripts/toolkit/cli.py": "",
        "scripts/toolkit/load/closed_loop.py": "",
        "tests/conftest.py": "from tests.helpers import helper\n",
        "tests/helpers.py": "helper = 1\n",
        "tests/lab/test_lab_only.py": "",
        "pyproject.toml": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = student_files(tmp_path)
    assert {"scripts/db.py", "scripts/toolkit/cli.py", "scripts/toolkit/__init__.py", "tests/helpers.py"} <= found
    assert (
        not {
            "scripts/bench.py",
            "scripts/toolkit/load/closed_loop.py",
            "ticket_api/README.md",
            "tests/lab/test_lab_only.py",
        }
        & found
    )
    assert unused_files(tmp_path) == ["ticket_api/orphan.py"]


@pytest.mark.parametrize("snapshot", ["end-of-m01", "end-of-m02"])
def test_a_snapshot_ships_only_what_it_uses(snapshot):
    assert unused_names(ROOT / "snapshots" / snapshot) == []


@pytest.mark.parametrize("snapshot", ["end-of-m01", "end-of-m02"])
def test_a_snapshot_names_no_path_or_module_it_does_not_have(snapshot):
    assert missing_references(ROOT / "snapshots" / snapshot) == []


def test_what_nothing_uses_and_what_is_not_there_are_found(tmp_path):
    files = {
        "ticket_api/__init__.py": "",
        "ticket_api/main.py": (
            '"""See scripts/README.md and `python -m scripts.watch`; ticket_api/used.py is here."""\n'
            "from ticket_api.used import needed\n\n"
            "@router.get('/health')\ndef health():\n    return needed()\n"
        ),
        "ticket_api/used.py": (
            "LIMIT = 3  # read by nobody\n\n\ndef needed():\n    return 1\n\n\n"
            'def lab_only():\n    """Mentions needed in words only."""\n\n\nclass Tool:\n'
            "    def run(self):\n        pass\n\n    def forgotten(self):\n        pass\n\n\nTool().run()\n"
        ),
        "tests/conftest.py": (
            "import pytest\n\n\n@pytest.fixture\ndef db():\n    return 1\n\n\n"
            "@pytest.fixture\ndef unasked():\n    return 2\n"
        ),
        "tests/test_x.py": "pytestmark = []\n\n\ndef test_x(db):\n    assert db\n",
        "README.md": "[the API](ticket_api/main.py), [gone](docs/gone.md), `tests/lab/test_x.py`\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert unused_names(tmp_path) == [
        "tests/conftest.py:10: unasked",
        "ticket_api/used.py:1: LIMIT",
        "ticket_api/used.py:8: lab_only",
        "ticket_api/used.py:16: forgotten",
    ]
    assert sorted(missing_references(tmp_path)) == [
        "README.md:1: docs/gone.md",
        "README.md:1: tests/lab/test_x.py",
        "ticket_api/main.py:1: scripts.watch",
        "ticket_api/main.py:1: scripts/README.md",
    ]


def test_the_students_simulator_carries_no_benchmark_of_the_lab():
    for snapshot in ("end-of-m01", "end-of-m02"):
        simulator = {name for name in student_files(ROOT / "snapshots" / snapshot) if name.startswith("simulator/")}
        assert "simulator/server.py" in simulator
        assert not {"simulator/bench.py", "simulator/loadgen.py", "simulator/reference.py"} & simulator


@pytest.mark.timing
# Both suites and every lesson's commands: about 3 minutes on a quiet machine, over 5 on a busy one.
@pytest.mark.timeout(1000)
def test_every_snapshot_and_lesson_keeps_its_promises():
    result = subprocess.run(
        [sys.executable, "-m", "scripts.snapshots", "check"], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert result.stdout.strip().endswith("snapshots: all promises hold")


def test_the_copy_lines_are_the_lessons_own():
    files = load_lessons()[1][0].copy
    shell, powershell = copy_commands("end-of-m02", files)
    assert shell == (
        "S=../nextia-learning-labs/C21/snapshots/end-of-m02\n"
        "for f in ticket_api/config.py ticket_api/intake.py ticket_api/main.py ticket_api/provider.py "
        "ticket_api/repository.py tests/fakes.py tests/test_concurrency.py scripts/stall.py README.md; "
        'do cp "$S/$f" "$f"; done'
    )
    assert powershell.startswith('$S = "..\\nextia-learning-labs\\C21\\snapshots\\end-of-m02"\nforeach ($f in ')
    assert powershell.endswith("'scripts\\stall.py', 'README.md') { Copy-Item \"$S\\$f\" $f }")
