"""GET /metrics: what fills up while the API waits, in Prometheus text format."""

import threading

from anyio import to_thread
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily

from ticket_api.watchdog import event_loop_name

LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The API's metrics: counted as things happen, or read live at every scrape."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.loop_lag = Histogram(
            "ticket_api_event_loop_lag_seconds",
            "How late the event loop ran a 50 ms heartbeat (blocked loop = large lag).",
            buckets=LAG_BUCKETS,
            registry=self.registry,
        )
        self.tickets = Counter(
            "ticket_api_tickets",
            "POST /v1/tickets answers by outcome: created, or the error code.",
            ["outcome"],
            registry=self.registry,
        )

    def watch(self, app_state) -> None:
        """Read the thread limiter, the DB pool and the provider from the app's state at every scrape."""
        self.registry.register(_LiveFigures(app_state))

    def render(self) -> bytes:
        """Everything in Prometheus text format."""
        return generate_latest(self.registry)


class _LiveFigures:
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
        limiter = to_thread.current_default_thread_limiter().statistics()
        yield _gauge(
            "ticket_api_threads_total", "Tokens of AnyIO's default thread limiter (THREAD_LIMIT).", limiter.total_tokens
        )
        yield _gauge("ticket_api_threads_borrowed", "Thread-pool tokens in use.", limiter.borrowed_tokens)
        yield _gauge("ticket_api_threads_waiting", "Tasks waiting for a thread-pool token.", limiter.tasks_waiting)
        db = self.state.db.stats()
        yield _gauge("ticket_api_db_pool_size", "Open connections in the DB pool.", db["size"])
        yield _gauge("ticket_api_db_pool_max", "DB_POOL_MAX_SIZE.", db["max"])
        yield _gauge("ticket_api_db_pool_in_use", "DB connections borrowed right now.", db["in_use"])
        yield _gauge("ticket_api_db_pool_waiting", "Requests waiting for a DB connection.", db["waiting"])
        yield CounterMetricFamily(
            "ticket_api_db_pool_lent", "DB connections lent by the pool so far.", value=db["lent"]
        )
        yield CounterMetricFamily(
            "ticket_api_db_pool_wait_seconds", "Time requests waited for a DB connection.", value=db["wait_ms"] / 1000
        )
        yield _gauge(
            "ticket_api_provider_in_flight", "Calls to the AI provider under way.", self.state.provider.in_flight
        )


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


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
