"""Experiment 8's explanation, on the loops themselves: after a blocked step, which task runs next?

During one blocking callback a worker thread hands a result back (call_soon_threadsafe, as AnyIO's
thread pool does) and a request arrives on a socket. asyncio wakes the thread's task first; uvloop
runs the request's task first, because libuv reads the socket in its poll phase, one trip through
the ready queue sooner.
"""

import asyncio
import importlib.util
import socket
import threading
import time

import pytest


def order_after_a_blocked_step(loop_factory) -> list[str]:
    """What ran after the block, in order."""
    order: list[str] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()

        async def request_task() -> None:
            order.append("request task")

        class Request(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                order.append("socket read")
                loop.create_task(request_task())

        server = await loop.create_server(Request, "127.0.0.1", 0)
        client = socket.create_connection(server.sockets[0].getsockname())
        await asyncio.sleep(0.05)  # the connection is accepted and read from
        thread_result = loop.create_future()

        async def thread_waiting_task() -> None:
            await thread_result
            order.append("thread-waiting task")

        loop.create_task(thread_waiting_task())
        await asyncio.sleep(0)

        def blocked_step() -> None:
            threading.Thread(target=loop.call_soon_threadsafe, args=(thread_result.set_result, None)).start()
            time.sleep(0.05)
            client.sendall(b"GET /health HTTP/1.1\r\n\r\n")
            time.sleep(0.2)  # the loop is held: nothing above has run yet

        loop.call_soon(blocked_step)
        await asyncio.sleep(0.5)
        server.close()
        client.close()

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(main())
    return order


@pytest.mark.timing
def test_asyncio_wakes_the_task_whose_thread_work_finished_before_the_new_request():
    assert order_after_a_blocked_step(asyncio.SelectorEventLoop) == [
        "socket read",
        "thread-waiting task",
        "request task",
    ]


@pytest.mark.timing
@pytest.mark.uvloop
@pytest.mark.skipif(
    importlib.util.find_spec("uvloop") is None, reason='uvloop is not installed: pip install -e ".[uvloop]"'
)
def test_uvloop_runs_the_new_request_first():
    import uvloop

    assert order_after_a_blocked_step(uvloop.new_event_loop) == ["socket read", "request task", "thread-waiting task"]
