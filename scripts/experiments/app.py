"""The experiment app of the wider reading: `uvicorn scripts.experiments.app:app`. It never touches tickets.

Each group does one piece of work in several ways, to be read side by side and measured with
`python -m scripts.probe /...`: a 100 ms wait, ~13 ms of CPU work, a 500-row answer and a call
to the AI provider. The routes marked "A mistake, on purpose" are the ones the readings warn about.

The plain `def` routes say `response_model=None`: with a response model, FastAPI would check the
answer in a second trip to the thread pool, and that trip also needs a free thread.
"""

import asyncio
import multiprocessing
import time
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Annotated, Any

import httpx
import orjson
from anyio import to_thread
from fastapi import APIRouter, Depends, FastAPI, Query, Request, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from scripts.experiments.cpu import DEFAULT_LOOPS, burn_cpu
from scripts.experiments.settings import ExperimentSettings
from ticket_api.errors import ProviderUnavailable, describe
from ticket_api.instruments.error_answers import install_error_handlers
from ticket_api.instruments.requestlog import RequestLog, configure_logging, set_log_level

WaitMs = Annotated[int, Query(ge=0, le=10_000, description="how long to wait, in milliseconds")]
Loops = Annotated[int, Query(ge=1_000, le=5_000_000, description="size of the CPU work (300,000 is ~13 ms)")]
RowCount = Annotated[int, Query(ge=1, le=10_000, description="rows in the answer")]

# The cheapest call the simulator replays with a recorded latency (~200 ms), and outside its chat quota.
UPSTREAM_PATH = "/embeddings"
UPSTREAM_BODY = {"model": "text-embedding-3-small", "input": "lab", "dimensions": 8}
# The simulator counts its quota per key (off in the experiments); any key will do.
API_KEY = "sk-lab-local"


class LabTools:
    """What the routes own: a blocking and an async HTTP client to the provider, made with the app, and a process
    pool, started on first use; closed with the app."""

    def __init__(self, provider_url: str):
        options: dict[str, Any] = {
            "base_url": provider_url,
            "headers": {"Authorization": f"Bearer {API_KEY}"},
            "limits": httpx.Limits(max_connections=1000, max_keepalive_connections=1000),  # never the limit
            "timeout": 60.0,
        }
        self.blocking_client = httpx.Client(**options)
        self.async_client = httpx.AsyncClient(**options)
        self._processes: ProcessPoolExecutor | None = None

    def processes(self) -> ProcessPoolExecutor:
        """The process pool (one worker per core), started on first use: warm it up before measuring."""
        if self._processes is None:
            # "spawn": a fresh interpreter per worker; forking a process that runs threads is unsafe.
            self._processes = ProcessPoolExecutor(mp_context=multiprocessing.get_context("spawn"))
        return self._processes

    async def aclose(self) -> None:
        """Close the clients and stop the pool's worker processes."""
        self.blocking_client.close()
        await self.async_client.aclose()
        if self._processes is not None:
            await to_thread.run_sync(self._processes.shutdown)


async def get_lab_tools(request: Request) -> LabTools:
    """The app's clients and process pool, made in the lifespan."""
    return request.app.state.lab


LabDep = Annotated[LabTools, Depends(get_lab_tools)]
router = APIRouter()


@router.get("/health")
async def health() -> dict:
    """Always `{"status": "ok"}`: nothing awaited, so its time shows only how free the loop is."""
    return {"status": "ok"}


@router.get("/noop/def", response_model=None)
def noop_def() -> dict:
    """Does nothing, in a plain def: even so it needs a free thread of the pool."""
    return {"ok": True}


# --- One wait (100 ms by default), five ways --------------------------------------------------


@router.get("/sleep/def", response_model=None)
def sleep_def(ms: WaitMs = 100) -> dict:
    """def + time.sleep: the wait holds one thread of the pool (THREAD_LIMIT); the loop stays free."""
    time.sleep(ms / 1000)
    return {"waited_ms": ms}


@router.get("/sleep/async-blocking")
async def sleep_async_blocking(ms: WaitMs = 100) -> dict:
    """async def + time.sleep: the wait holds the event loop, so every request of the process waits."""
    time.sleep(ms / 1000)  # A mistake, on purpose: a waiting call without await inside async def.
    return {"waited_ms": ms}


@router.get("/sleep/async")
async def sleep_async(ms: WaitMs = 100) -> dict:
    """async def + await asyncio.sleep: the loop serves other requests during the wait."""
    await asyncio.sleep(ms / 1000)
    return {"waited_ms": ms}


@router.get("/sleep/threadpool")
async def sleep_threadpool(ms: WaitMs = 100) -> dict:
    """async def + run_in_threadpool: the wait goes to AnyIO's pool, the one plain def routes use."""
    await run_in_threadpool(time.sleep, ms / 1000)
    return {"waited_ms": ms}


@router.get("/sleep/to-thread")
async def sleep_to_thread(ms: WaitMs = 100) -> dict:
    """async def + asyncio.to_thread: the wait goes to the loop's own executor, min(32, cores + 4) threads."""
    await asyncio.to_thread(time.sleep, ms / 1000)
    return {"waited_ms": ms}


# --- CPU work (~13 ms), four ways -------------------------------------------------------------


@router.get("/cpu/def", response_model=None)
def cpu_def(loops: Loops = DEFAULT_LOOPS) -> dict:
    """def: the work runs in a pool thread, but the GIL lets only one thread compute at a time."""
    return {"result": burn_cpu(loops)}


@router.get("/cpu/async")
async def cpu_async(loops: Loops = DEFAULT_LOOPS) -> dict:
    """async def: computing never reaches an await, so it holds the loop like time.sleep does."""
    return {"result": burn_cpu(loops)}  # A mistake, on purpose: CPU work on the event loop.


@router.get("/cpu/to-thread")
async def cpu_to_thread(loops: Loops = DEFAULT_LOOPS) -> dict:
    """async def + asyncio.to_thread: the loop may switch, but it competes with the work for the GIL."""
    return {"result": await asyncio.to_thread(burn_cpu, loops)}


@router.get("/cpu/process")
async def cpu_process(lab: LabDep, loops: Loops = DEFAULT_LOOPS) -> dict:
    """async def + a process pool: other interpreters, each with its own GIL, do the work."""
    loop = asyncio.get_running_loop()
    return {"result": await loop.run_in_executor(lab.processes(), burn_cpu, loops)}


# --- The same rows (500 by default), serialized three ways ------------------------------------


class LabRow(BaseModel):
    """One row of the serialization experiment, shaped like a ticket summary."""

    id: int
    customer_id: int
    subject: str
    status: str
    priority: str
    created_at: datetime


@lru_cache(maxsize=8)
def sample_rows(count: int) -> list[dict]:
    """The same `count` rows every time, built once: the routes differ only in how they serialize."""
    start = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    return [
        {
            "id": i,
            "customer_id": 1 + i % 300,
            "subject": f"Invoice question number {i}",
            "status": "open",
            "priority": ("low", "normal", "high")[i % 3],
            "created_at": start + timedelta(minutes=7 * i),
        }
        for i in range(1, count + 1)
    ]


@router.get("/rows/dicts", response_model=None)
async def rows_dicts(rows: RowCount = 500) -> list[dict]:
    """Plain dicts, no response_model: FastAPI walks them with jsonable_encoder, in pure Python."""
    return sample_rows(rows)


@router.get("/rows/model", response_model=list[LabRow])
async def rows_model(rows: RowCount = 500) -> list[dict]:
    """The same dicts through a response_model: pydantic's compiled core validates and serializes them."""
    return sample_rows(rows)


@router.get("/rows/raw")
async def rows_raw(rows: RowCount = 500) -> Response:
    """The same dicts turned into JSON bytes by us (orjson): FastAPI has nothing left to convert."""
    return Response(orjson.dumps(sample_rows(rows)), media_type="application/json")


# --- One call to the AI provider (~200 ms), three ways ----------------------------------------


@router.get("/upstream/def", response_model=None)
def upstream_def(lab: LabDep) -> dict:
    """def + a blocking HTTP client: the call waits in a pool thread."""
    with provider_errors():
        response = lab.blocking_client.post(UPSTREAM_PATH, json=UPSTREAM_BODY)
    return upstream_answer(response)


@router.get("/upstream/async-blocking")
async def upstream_async_blocking(lab: LabDep) -> dict:
    """async def + the same blocking client: the whole process waits for the provider."""
    with provider_errors():
        response = lab.blocking_client.post(UPSTREAM_PATH, json=UPSTREAM_BODY)  # A mistake, on purpose.
    return upstream_answer(response)


@router.get("/upstream/async")
async def upstream_async(lab: LabDep) -> dict:
    """async def + an async client, awaited: the loop serves others during the call."""
    with provider_errors():
        response = await lab.async_client.post(UPSTREAM_PATH, json=UPSTREAM_BODY)
    return upstream_answer(response)


@contextmanager
def provider_errors() -> Iterator[None]:
    """A provider that cannot be reached becomes 502 ai_unavailable."""
    try:
        yield
    except httpx.TransportError as exc:
        raise ProviderUnavailable("cannot reach the AI provider", cause=describe(exc)) from None


def upstream_answer(response: httpx.Response) -> dict:
    """How long the provider took; an error status becomes 502 ai_unavailable."""
    if response.status_code >= 400:
        raise ProviderUnavailable(f"the AI provider answered {response.status_code}")
    return {"upstream_ms": round(response.elapsed.total_seconds() * 1000, 1)}


def create_app(settings: ExperimentSettings | None = None) -> FastAPI:
    """The experiment app; without `settings` (tests pass theirs), it reads them from the environment at start-up."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.settings = settings or ExperimentSettings.from_environment()
        configure_logging()
        set_log_level(app.state.settings.log_level)
        to_thread.current_default_thread_limiter().total_tokens = app.state.settings.thread_limit
        app.state.lab = LabTools(app.state.settings.provider_url)
        try:
            yield
        finally:
            await app.state.lab.aclose()

    app = FastAPI(title="Experiments", lifespan=lifespan)
    install_error_handlers(app)
    app.add_middleware(RequestLog)  # its Server-Timing header is what scripts.probe reports as "in the API"
    app.include_router(router)
    return app


app = create_app()
