"""Faults for reliability lessons: errors, hangs, forced rate limits and slow answers.

All are off by default. Random faults come from one seeded generator, so a run with the same
seed and the same order of calls fails the same calls. The header `X-Sim-Fault` forces one.
"""

import random

from simulator.errors import InvalidRequest

FAULTS = ("error", "unavailable", "hang", "rate_limit", "slow")
SLOW_FAULT_FACTOR = 5.0  # X-Sim-Fault: slow multiplies the call's delay by this
FORCED_RETRY_AFTER_S = 1  # Retry-After of a 429 forced by X-Sim-Fault: rate_limit


class FaultPlan:
    """Decides each AI call's fault and the load factor of --slowdown."""

    def __init__(self, error_rate: float, hang_rate: float, hang_s: float, slowdown: float, seed: int) -> None:
        self.error_rate = error_rate
        self.hang_rate = hang_rate
        self.hang_s = hang_s
        self.slowdown = slowdown
        self._random = random.Random(f"{seed}:faults")

    def pick(self, forced: str | None) -> str | None:
        """The fault of the next call: the forced one, else a seeded draw (error/unavailable/hang), else None."""
        if forced is not None:
            return forced
        if not (self.error_rate or self.hang_rate):
            return None
        draw = self._random.random()
        if draw < self.error_rate:
            return "error" if self._random.random() < 0.5 else "unavailable"
        if draw < self.error_rate + self.hang_rate:
            return "hang"
        return None

    def load_factor(self, in_flight: int) -> float:
        """How much a loaded provider stretches each delay: 1 + slowdown x in_flight / 100."""
        return 1.0 + self.slowdown * in_flight / 100.0


def forced_fault(header_value: str | None) -> str | None:
    """The fault named by an X-Sim-Fault header (None if absent); 400 for an unknown name."""
    if header_value is None:
        return None
    fault = header_value.strip().lower()
    if fault not in FAULTS:
        raise InvalidRequest(
            f"X-Sim-Fault must be one of {', '.join(FAULTS)}, not {header_value!r}.", param="X-Sim-Fault"
        )
    return fault
