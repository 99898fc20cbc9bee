"""GET /metrics: what fills up while the API waits, in Prometheus text format.

Each figure is one of prometheus_client's metrics, set from what the process holds at every scrape.
With several worker processes (ticket_api/workers.py), each worker also sets them at every beat of its
event loop's heartbeat, in the folder the workers share, and one scrape gives the whole server's (its
multiprocess mode): counts and gauges summed over the workers, the event loop's lag for each worker,
labelled with its pid, since one worker's lag is not another's.
"""

import os
import threading

from anyio import to_thread
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess
from prometheus_client.core import InfoMetricFamily

from ticket_api.watchdog import event_loop_name
from ticket_api.workers import counted_together, forget_stopped_servers, several_workers

LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
GAUGES = {  # name: help; each summed over the live workers
    "threads_total": "Tokens of AnyIO's default thread limiter (THREAD_LIMIT).",
    "threads_borrowed": "Thread-pool tokens in use.",
    "threads_waiting": "Tasks waiting for a thread-pool token.",
    "db_pool_size": "Open connections in the DB pool.",
    "db_pool_max": "DB_POOL_MAX_SIZE.",
    "db_pool_in_use": "DB connections borrowed right now.",
    "db_pool_waiting": "Requests waiting for a DB connection.",
    "provider_in_flight": "Calls to the AI provider under way.",
}


class Metrics:
    """The API's metrics: counted as things happen, or read from the app's state at every scrape (and beat)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.together = counted_together()
        # The loop's lag is labelled with the pid where there are several workers (one worker's lag is not
        # another's): in a worker, whether there are others is known at start(); a process of its own is alone.
        self._loop_lag = None if self.together else self._lag(by_pid=False)
        self.tickets = self._counter("tickets", "POST /v1/tickets answers by outcome: created, or the error code.")
        self.provider_calls = self._counter("provider_calls", "Calls to the AI provider made for requests.")
        self.db_lent = self._counter("db_pool_lent", "DB connections lent by the pool so far.")
        self.db_wait = self._counter("db_pool_wait_seconds", "Time requests waited for a DB connection.")
        self.gauges = {
            name: Gauge(f"ticket_api_{name}", text, multiprocess_mode="livesum", registry=self.registry)
            for name, text in GAUGES.items()
        }
        self._counted = {"lent": 0, "wait_ms": 0}  # what the counters have been given of the pool's running totals
        self._state = None

    def _counter(self, name: str, text: str) -> Counter:
        labels = ["outcome"] if name == "tickets" else []
        return Counter(f"ticket_api_{name}", text, labels, registry=self.registry)

    def watch(self, app_state) -> None:
        """Read the thread limiter, the DB pool and the provider from the app's state at every scrape."""
        self._state = app_state
        self.registry.register(_Settings(app_state))

    def heartbeat(self, lag_s: float) -> None:
        """A beat of the event loop's heartbeat: its lag; in a worker of several, this worker's figures too."""
        if self._loop_lag is not None:
            self._loop_lag.observe(lag_s)
        if self.together:
            self.publish()

    def publish(self) -> None:
        """Set every figure from what this process holds now (on the event loop: the thread limiter is the loop's)."""
        if self._state is None or not hasattr(self._state, "db"):
            return  # before the lifespan has made them
        limiter = to_thread.current_default_thread_limiter().statistics()
        db = self._state.db.stats()
        live = {
            "threads_total": limiter.total_tokens,
            "threads_borrowed": limiter.borrowed_tokens,
            "threads_waiting": limiter.tasks_waiting,
            "db_pool_size": db["size"],
            "db_pool_max": db["max"],
            "db_pool_in_use": db["in_use"],
            "db_pool_waiting": db["waiting"],
            "provider_in_flight": self._state.provider.in_flight,
        }
        for name, value in live.items():
            self.gauges[name].set(value)
        # The counters grow by what the pool's running totals grew since the last time.
        self.db_lent.inc(db["lent"] - self._counted["lent"])
        self.db_wait.inc((db["wait_ms"] - self._counted["wait_ms"]) / 1000)
        self._counted = {"lent": db["lent"], "wait_ms": db["wait_ms"]}

    def render(self) -> bytes:
        """Everything in Prometheus text format: this process's, or with several workers the whole server's."""
        self.publish()
        if not self.together:
            return generate_latest(self.registry)
        server = CollectorRegistry()
        multiprocess.MultiProcessCollector(server)
        if self._state is not None:
            server.register(_Settings(self._state))
        return generate_latest(server)

    @property
    def loop_lag(self) -> Histogram:
        """The event loop's lag (Module 1's main.py observes it); in a worker, made at start()."""
        if self._loop_lag is None:
            raise RuntimeError("a worker's event-loop lag is made at Metrics.start()")
        return self._loop_lag

    def _lag(self, by_pid: bool) -> Histogram:
        lag = Histogram(
            "ticket_api_event_loop_lag_seconds",
            "How late the event loop ran a 50 ms heartbeat (blocked loop = large lag).",
            ["pid"] if by_pid else [],
            buckets=LAG_BUCKETS,
            registry=self.registry,
        )
        return lag.labels(str(os.getpid())) if by_pid else lag

    def start(self) -> None:
        """At the start of this process's work: in a worker, its loop's lag, and the folders of stopped servers go."""
        self._counted = {"lent": 0, "wait_ms": 0}  # a new start, a new pool: its running totals start again
        if self.together and self._loop_lag is None:
            self._loop_lag = self._lag(by_pid=several_workers())
            forget_stopped_servers()

    def stop(self) -> None:
        """At the end of this process's work: counted together, its gauges leave the server's sums."""
        if self.together:
            multiprocess.mark_process_dead(os.getpid())


class _Settings:
    """How this API waits, from its settings: the same in every worker (an info metric is not summed)."""

    def __init__(self, app_state) -> None:
        self.state = app_state

    def describe(self) -> list:
        return []

    def collect(self):
        settings = self.state.settings
        how = {  # Module 1's settings have no INTAKE_MODE: its one way of waiting is the thread pool's.
            "intake_mode": getattr(settings, "intake_mode", "thread"),
            "event_loop": event_loop_name(),
            "thread_limit": str(settings.thread_limit),
            "db_pool_max_size": str(settings.db_pool_max_size) if settings.db_pool else "off",
        }
        yield InfoMetricFamily("ticket_api", "INTAKE_MODE, event loop, THREAD_LIMIT, pool size.", value=how)


class InFlight:
    """A figure counted from any thread: `with in_flight:` counts the block in `now` while it runs, and in `so_far`."""

    def __init__(self) -> None:
        self.now = 0
        self.so_far = 0
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self.now += 1
            self.so_far += 1

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self.now -= 1
