"""The CPU work of the experiments, in a module of its own.

A process pool sends the function to its workers by name, and each worker imports this module:
it must stay cheap to import, so it imports nothing.
"""

DEFAULT_LOOPS = 300_000  # about 10-15 ms of pure Python on a laptop core


def burn_cpu(loops: int) -> int:
    """Pure-Python arithmetic that holds the GIL the whole time: no I/O, nothing to await."""
    return sum(i * i for i in range(loops))
