"""The one-mistake projects of chaffs.toml, made from snapshots/end-of-m02: `python -m tests.lab.check.chaffs OUT`.

With `--golden`, it also runs the checker on each (its `only` checks) and writes golden/<name>.json from what it
said: read the differences before committing them, since the golden files are what the tests hold the checker to.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from scripts.toolkit.cli import PROJECT_ROOT, CommandError, run

HERE = Path(__file__).resolve().parent
SNAPSHOTS = PROJECT_ROOT / "snapshots"
SOURCE = SNAPSHOTS / "end-of-m02"
GOLDEN = HERE / "golden"


def load_chaffs() -> list[dict]:
    """The chaffs of chaffs.toml."""
    return tomllib.loads((HERE / "chaffs.toml").read_text())["chaffs"]


def make_chaff(chaff: dict, into: Path) -> Path:
    """A copy of end-of-m02 with the chaff's changes, in `into`; CommandError if a change no longer applies."""
    shutil.copytree(SOURCE, into, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".lab"))
    for change in chaff["changes"]:
        target = into / change["file"]
        if "as_in" in change:
            shutil.copy2(SNAPSHOTS / change["as_in"] / change["file"], target)
            continue
        if change["old"] == "":
            if target.exists():
                raise CommandError(f"{chaff['name']}: {change['file']} exists in {SOURCE.name} already")
            target.write_text(change["new"])
            continue
        text = target.read_text()
        if text.count(change["old"]) != 1:
            found = text.count(change["old"])
            raise CommandError(f"{chaff['name']}: {change['file']} holds its `old` text {found} times, not once")
        target.write_text(text.replace(change["old"], change["new"]))
    return into


def check(
    project: Path, only: list[str], env: dict[str, str] | None = None, lesson: str | None = "m02-io-versus-cpu"
) -> tuple[int, dict]:
    """Run `python -m scripts.check PROJECT --lesson LESSON --only ... --json`: its exit code and JSON."""
    argv = [sys.executable, "-m", "scripts.check", str(project), "--json"]
    argv += ["--lesson", lesson] if lesson else []
    argv += [word for name in only for word in ("--only", name)]
    result = subprocess.run(
        argv, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})}
    )
    if not result.stdout.strip():
        raise AssertionError(f"no JSON (exit {result.returncode}): {result.stderr[-2000:]}")
    return result.returncode, json.loads(result.stdout)


def verdicts(report: dict) -> dict[str, dict]:
    """What a golden file pins of a report: each check's status, hint id and number of runs."""
    return {
        item["name"]: {"status": item["status"], "hint_id": item["hint_id"], "runs": item["runs"]}
        for item in report["checks"]
    }


def main() -> int:
    """Write the chaffs into OUT; with --golden, the golden files too."""
    parser = argparse.ArgumentParser(prog="python -m tests.lab.check.chaffs", description=__doc__)
    parser.add_argument("out", help="a folder to write the chaffs into (one folder each)")
    parser.add_argument("--golden", action="store_true", help="run the checker on each and write golden/NAME.json")
    args = parser.parse_args()
    for chaff in load_chaffs():
        project = make_chaff(chaff, Path(args.out) / chaff["name"])
        print(f"{chaff['name']}: {project}")
        if args.golden:
            code, report = check(project, chaff["only"])
            golden = {"mistake": chaff["mistake"], "only": chaff["only"], "exit": code, "checks": verdicts(report)}
            (GOLDEN / f"{chaff['name']}.json").write_text(json.dumps(golden, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    run(main)
