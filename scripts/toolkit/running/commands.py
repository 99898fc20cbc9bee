"""Running commands to their end, in this terminal or captured, and a function in an interpreter of its own."""

import asyncio
import multiprocessing
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from scripts.toolkit.cli import PROJECT_ROOT
from scripts.toolkit.processes import signals_ignored, start_process, stop_process

GRACE_S = 5  # how long a command in the foreground may take to end after a Ctrl+C, before it is stopped


@contextmanager
def running(argv: list[str], **options: Any) -> Iterator[subprocess.Popen]:
    """start_process() for the length of the block; stopped by pid however the block ends."""
    process = start_process(argv, **options)
    try:
        yield process
    finally:
        stop_process(process)


def run_to_completion(
    argv: list[str], cwd: Path = PROJECT_ROOT, env: dict[str, str] | None = None, timeout_s: float | None = None
) -> subprocess.CompletedProcess:
    """Run a command to its end in a group of its own, its output captured as text; its result.

    Past `timeout_s`, or on Ctrl+C or SIGTERM meanwhile, it is stopped with its children, and the
    exception goes on (subprocess.TimeoutExpired for the timeout).
    """
    process = start_process(argv, cwd, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with process:  # its pipes closed however it ends
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except BaseException:
            stop_process(process, graceful=False)
            raise
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def run_in_foreground(argv: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> int:
    """Run a command in this terminal's process group, so that a Ctrl+C reaches it as it reaches us; its exit code.

    On Ctrl+C or SIGTERM, the command gets GRACE_S to end by itself, then SIGTERM, then SIGKILL; the
    KeyboardInterrupt goes on once it has ended.
    """
    process = subprocess.Popen(argv, cwd=cwd, env=env)
    try:
        return process.wait()
    except KeyboardInterrupt:
        with signals_ignored():
            for stop in (None, process.terminate, process.kill):
                if stop is not None:
                    stop()
                try:
                    process.wait(GRACE_S)
                    break
                except subprocess.TimeoutExpired:
                    continue
        raise


async def in_own_process(function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` in a fresh interpreter of its own (its own GIL and event loop); its result.

    Without blocking the caller's event loop, also while the process starts and ends.
    """
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        return await asyncio.get_running_loop().run_in_executor(pool, function, *args)
    finally:
        await asyncio.to_thread(pool.shutdown)
