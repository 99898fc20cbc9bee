"""GET /metrics: what fills up while the API waits, in Prometheus text format.

Each figure is one of prometheus_client's metrics, set from what the process holds at every scrape.
With several worker processes (workers.py), each worker also sets them at every beat of its event
loop's heartbeat, in the folder the workers share, and one scrape gives the whole server's (its
multiprocess mode): counts and gauges summed over the workers, the event loop's lag for each worker,
labelled with its pid, since one worker's lag is not another's.
"""

import os

from anyio import to_thread
from fastapi import Request, Response
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess
from starlette.types import Scope

from ticket_api.instruments.watchdog import event_loop_name
from ticket_api.instruments.workers import SHARED, forget_stopped_servers, several_workers

INFO_LABELS = ["db_pool_max_size", "event_loop", "intake_mode", "thread_limit"]
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

    def __init__(self, app_state) -> None:
        self.state = app_state
        self.registry = CollectorRegistry(auto_describe=True)
        self.together = SHARED in os.environ  # this process counts in a folder its server's processes share
        self.loop_lag: Histogram | None = None  # made at start(): whether a worker has others is known only then
        self.tickets = self._counter("tickets", "POST /v1/tickets answers by outcome: created, or the error code.")
        self.provider_calls = self._counter("provider_calls", "Calls to the AI provider made for requests.")
        self.db_lent = self._counter("db_pool_lent", "DB connections lent by the pool so far.")
        self.db_wait = self._counter("db_pool_wait_seconds", "Time requests waited for a DB connection.")
        self.gauges = {
            name: Gauge(f"ticket_api_{name}", text, multiprocess_mode="livesum", registry=self.registry)
            for name, text in GAUGES.items()
        }
        # How this API waits, from its settings: the same in every worker (not summed). Module 1's settings have no
        # INTAKE_MODE: its one way of waiting is the thread pool's.
        self.how = Gauge(
            "ticket_api_info",
            "INTAKE_MODE, event loop, THREAD_LIMIT, pool size.",
            INFO_LABELS,
            multiprocess_mode="livemax",
            registry=self.registry,
        )
        self._counted = {"lent": 0, "wait_ms": 0}  # what the counters have been given of the pool's running totals

    def _counter(self, name: str, text: str) -> Counter:
        labels = ["outcome"] if name == "tickets" else []
        return Counter(f"ticket_api_{name}", text, labels, registry=self.registry)

    def count_request(self, scope: Scope, status: int, provider_calls: int) -> None:
        """A request has ended: its provider calls, and a ticket's outcome (created, or its error code)."""
        if provider_calls:
            self.provider_calls.inc(provider_calls)
        if scope["method"] == "POST" and scope["path"] == "/v1/tickets":
            error_code = scope.get("state", {}).get("error_code", f"http_{status}")
            self.tickets.labels("created" if status == 201 else error_code).inc()

    def heartbeat(self, lag_s: float) -> None:
        """A beat of the event loop's heartbeat: its lag; in a worker of several, this worker's figures too."""
        if self.loop_lag is not None:
            self.loop_lag.observe(lag_s)
        if self.together:
            self.publish()

    def publish(self) -> None:
        """Set every figure from what this process holds now (on the event loop: the thread limiter is the loop's)."""
        if not hasattr(self.state, "db"):
            return  # before the lifespan has made it
        limiter = to_thread.current_default_thread_limiter().statistics()
        db = self.state.db
        pool = db.pool.get_stats() if db.pool is not None else {}
        live = {
            "threads_total": limiter.total_tokens,
            "threads_borrowed": limiter.borrowed_tokens,
            "threads_waiting": limiter.tasks_waiting,
            "db_pool_size": pool.get("pool_size", 0),
            "db_pool_max": db.max_size if db.pool is not None else 0,
            "db_pool_in_use": db.lent.now,
            "db_pool_waiting": db.asked.now - db.lent.now,
            "provider_in_flight": self.state.provider.in_flight,
        }
        for name, value in live.items():
            self.gauges[name].set(value)
        # The counters grow by what the pool's running totals grew since the last time.
        totals = {"lent": db.lent.so_far, "wait_ms": pool.get("requests_wait_ms", 0)}
        self.db_lent.inc(totals["lent"] - self._counted["lent"])
        self.db_wait.inc((totals["wait_ms"] - self._counted["wait_ms"]) / 1000)
        self._counted = totals

    async def page(self, request: Request) -> Response:
        """GET /metrics: this process's figures, or with several workers the whole server's."""
        self.publish()
        if not self.together:
            return Response(generate_latest(self.registry), media_type="text/plain; version=0.0.4")
        server = CollectorRegistry()
        multiprocess.MultiProcessCollector(server)
        return Response(generate_latest(server), media_type="text/plain; version=0.0.4")

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
        """At the start of this process's work (on its event loop): how it waits; in a worker, its loop's lag, and the
        folders of stopped servers go."""
        self._counted = {"lent": 0, "wait_ms": 0}  # a new start, a new pool: its running totals start again
        settings = self.state.settings
        pool = str(settings.db_pool_max_size) if settings.db_pool else "off"
        mode = getattr(settings, "intake_mode", "thread")
        self.how.labels(pool, event_loop_name(), mode, str(settings.thread_limit)).set(1)
        if self.loop_lag is None:
            # Labelled with the pid where there are several workers: one worker's lag is not another's.
            self.loop_lag = self._lag(by_pid=self.together and several_workers())
        if self.together:
            forget_stopped_servers()

    def stop(self) -> None:
        """At the end of this process's work: counted together, its gauges leave the server's sums."""
        if self.together:
            multiprocess.mark_process_dead(os.getpid())
