"""A run watched from a thread of its own: the polling goes on until told, and a failure there is never lost."""

import threading
import time

import pytest

from scripts.toolkit.measure.meanwhile import WatchFailed, in_thread, polled_in_thread


def test_the_polling_goes_on_until_the_action_has_what_it_wanted():
    calls: list[int] = []

    def action() -> bool:
        calls.append(1)
        if len(calls) > 3:
            raise RuntimeError("polled again after it had what it wanted")  # fails the test, never hangs it
        return len(calls) == 3

    with polled_in_thread(action, 0.001, "poller", cut_short=False):
        pass
    assert len(calls) == 3


def test_the_polling_stops_when_the_block_ends():
    calls: list[int] = []
    started = threading.Event()

    def action() -> None:
        calls.append(1)
        started.set()

    with polled_in_thread(action, 0.001, "poller"):
        assert started.wait(30)
    seen = len(calls)
    assert not any(thread.name == "poller" for thread in threading.enumerate())  # joined
    time.sleep(0.05)  # fifty intervals: a poller still running would have polled again
    assert len(calls) == seen


async def fails(stop) -> None:
    raise ValueError("no answer")


def test_a_failure_in_the_thread_is_raised_once_the_block_has_ended():
    with pytest.raises(WatchFailed, match="poller: ValueError: no answer"):
        with in_thread(fails, "poller"):
            pass


def test_a_failure_in_the_thread_is_told_when_the_block_fails_too(capsys):
    with pytest.raises(KeyError):
        with in_thread(fails, "poller"):
            raise KeyError("the block's own")
    assert "meanwhile, poller: ValueError: no answer" in capsys.readouterr().err
