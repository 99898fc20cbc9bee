"""scripts.check's loop sampler, on its own and in seconds: the coroutine that held the event loop and what waited
under it, its reports read back from an API's output, and what counts as the project's own code."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from scripts.toolkit.check import loop_sampler
from scripts.toolkit.cli import PROJECT_ROOT


@pytest.mark.timing
def test_the_sampler_names_the_coroutine_that_held_the_loop_and_what_waited_under_it(tmp_path):
    (tmp_path / "app.py").write_text(
        textwrap.dedent(
            """\
            import asyncio, threading, time
            from pathlib import Path
            from scripts.toolkit.check import loop_sampler

            def wait():
                time.sleep(0.4)

            async def handler():
                await asyncio.sleep(0.05)
                wait()
                await asyncio.sleep(0.05)

            async def quick():
                for _ in range(20):
                    await asyncio.sleep(0.01)

            async def main():
                await asyncio.gather(handler(), quick())

            threading.Thread(target=loop_sampler.watch, args=(threading.get_ident(), Path.cwd()), daemon=True).start()
            asyncio.run(main())
            time.sleep(0.1)
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    result = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    [report] = loop_sampler.read_held(result.stderr)
    assert (report["file"], report["line"], report["function"], report["code"]) == ("app.py", 10, "handler", "wait()")
    assert report["waiting_in"] == {"file": "app.py", "line": 6, "function": "wait", "code": "time.sleep(0.4)"}
    assert 300 <= report["ms"] <= 600 and report["cpu"] < 0.5  # waiting, not computing


def test_a_report_is_read_back_even_from_a_line_another_thread_wrote_into():
    report = {"ms": 412, "cpu": 0.02, "file": "ticket_api/ai.py", "line": 82, "function": "f", "code": "x()"}
    text = f"INFO: started\nINFO ticket_api: GET /h{loop_sampler.MARK}{json.dumps(report)}INFO ticket_api: POST 201\n"
    assert loop_sampler.read_held(text) == [report]


def test_the_projects_own_code_is_its_folder_without_installed_libraries_or_hidden_folders(tmp_path):
    assert loop_sampler.in_project(tmp_path / "ticket_api" / "ai.py", tmp_path)
    assert not loop_sampler.in_project(tmp_path / ".venv" / "lib" / "httpx" / "_client.py", tmp_path)
    assert not loop_sampler.in_project(tmp_path / "venv" / "lib" / "site-packages" / "httpx.py", tmp_path)
    assert not loop_sampler.in_project(Path("/usr/lib/python3.11/asyncio/events.py"), tmp_path)
    assert not loop_sampler.in_project(Path("<frozen runpy>"), tmp_path)
