"""A run watched from a thread of its own: the polling goes on until told, and a failure there is raised here."""

import threading

import pytest

from scripts.toolkit.measure.meanwhile import WatchFailed, in_thread, polled_in_thread


def test_the_polling_goes_on_until_the_action_has_what_it_wanted():
    calls: list[int] = []

    def action() -> bool:
        calls.append(1)
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
    assert not any(thread.name == "poller" for thread in threading.enumerate())  # joined: it polls no more
    assert len(calls) == seen


def test_a_failure_in_the_thread_is_raised_once_the_block_has_ended():
    async def fails(stop) -> None:
        raise ValueError("no answer")

    with pytest.raises(WatchFailed, match="poller: ValueError: no answer"):
        with in_thread(fails, "poller"):
            pass
