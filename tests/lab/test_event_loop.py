"""The API names its event loop at start-up, and warns on uvloop: a real `python -m uvicorn` process on each loop."""

import importlib.util

import pytest

from scripts.toolkit import processes
from scripts.toolkit.running import apis

UVLOOP_MISSING = importlib.util.find_spec("uvloop") is None


def start_up_lines(loop: str, database_url: str, tmp_path) -> list[str]:
    """The log lines of an API started on `loop` at the default LOG_LEVEL, up to its first answer to /health."""
    unreachable_provider = f"http://127.0.0.1:{processes.free_port()}/v1"  # start-up does not call the provider
    api = apis.api(
        unreachable_provider, env={"DATABASE_URL": database_url, "LOG_LEVEL": "INFO"}, log_dir=tmp_path, loop=loop
    )
    with api:
        return api.log_path.read_text().splitlines()


def loop_warnings(lines: list[str]) -> list[str]:
    """The WARNING lines of the logger that names the loop (the provider being unreachable warns elsewhere)."""
    return [line for line in lines if line.startswith("WARNING ticket_api.watchdog")]


def test_on_asyncio_the_api_names_its_loop_and_warns_of_nothing(database_url, tmp_path):
    lines = start_up_lines("asyncio", database_url, tmp_path)
    assert "INFO ticket_api.watchdog: event loop: asyncio (_UnixSelectorEventLoop)" in lines
    assert loop_warnings(lines) == []


@pytest.mark.uvloop
@pytest.mark.skipif(UVLOOP_MISSING, reason='uvloop is not installed: pip install -e ".[uvloop]"')
def test_on_uvloop_the_api_warns_that_blocking_mode_differs_from_the_course(database_url, tmp_path):
    lines = start_up_lines("uvloop", database_url, tmp_path)
    assert "INFO ticket_api.watchdog: event loop: uvloop (Loop)" in lines
    warnings = loop_warnings(lines)
    assert len(warnings) == 1
    assert "INTAKE_MODE=blocking's /health figures differ from the course's" in warnings[0]
    assert "python -m pip uninstall -y uvloop" in warnings[0] and "--loop asyncio" in warnings[0]
