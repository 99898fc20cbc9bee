"""What the experiment routes own: a blocking and an async HTTP client to the provider, and a process pool."""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import httpx
from anyio import to_thread

# The simulator counts its quota per key (off in the experiments); any key will do.
API_KEY = "sk-lab-local"


class LabTools:
    """The clients, made with the app, and the process pool, started on first use; closed with the app."""

    def __init__(self, provider_url: str, api_key: str = API_KEY):
        options: dict[str, Any] = {
            "base_url": provider_url,
            "headers": {"Authorization": f"Bearer {api_key}"},
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
