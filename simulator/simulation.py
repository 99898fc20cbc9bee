"""The simulated provider's state, built once at start: replay, quota, faults, calls in flight."""

import dataclasses
import itertools
import secrets
import time

from simulator.asgi import StopSignal
from simulator.faults import SLOW_FAULT_FACTOR, FaultPlan
from simulator.quota import ChatQuota
from simulator.replay import RecordedCall, Recording, Replay
from simulator.settings import Settings


@dataclasses.dataclass(frozen=True, slots=True)
class Wait:
    """How long one call waits before its answer, and before its first streamed token (seconds)."""

    total_s: float
    ttft_s: float


class Simulation:
    """Everything the request handlers share; one per server."""

    def __init__(self, settings: Settings, recording: Recording) -> None:
        self.settings = settings
        self.recording = recording
        self.replay = Replay(recording, settings.mode, settings.seed)
        self.quota = ChatQuota(settings.quota)
        self.faults = FaultPlan(
            settings.error_rate, settings.hang_rate, settings.hang_s, settings.slowdown, settings.seed
        )
        self.in_flight = 0
        self.stop_signal = StopSignal()
        self.started_at = int(time.time())
        self._id_prefix = secrets.token_hex(3)
        self._counter = itertools.count(1)

    def new_id(self, prefix: str) -> str:
        """A response id such as chatcmpl-sim3fa2c1-42: unique within this run."""
        return f"{prefix}-sim{self._id_prefix}-{next(self._counter)}"

    def plan_wait(self, call: RecordedCall, fault: str | None) -> Wait:
        """The recorded delays scaled by --speed, by the load (--slowdown) and by a slow or hang fault."""
        factor = self.settings.speed * self.faults.load_factor(self.in_flight)
        if fault == "slow":
            factor *= SLOW_FAULT_FACTOR
        # A hang is real time on top of the call: it must outlast client timeouts at any --speed.
        extra_s = self.faults.hang_s if fault == "hang" else 0.0
        total_s = call.latency_ms / 1000 * factor + extra_s
        ttft_s = (call.ttft_ms or 0.0) / 1000 * factor + extra_s
        return Wait(total_s=total_s, ttft_s=ttft_s)
