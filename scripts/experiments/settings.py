"""The experiment app's few settings, read from the environment when it starts (never at import)."""

import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_PROVIDER_URL = "http://127.0.0.1:8100/v1"  # where `python -m simulator` serves
DEFAULT_THREAD_LIMIT = 40  # AnyIO's own default
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@dataclass(frozen=True)
class ExperimentSettings:
    """PROVIDER_URL for the /upstream routes, THREAD_LIMIT for AnyIO's thread pool, LOG_LEVEL for our log lines."""

    provider_url: str = DEFAULT_PROVIDER_URL
    thread_limit: int = DEFAULT_THREAD_LIMIT
    log_level: str = "WARNING"  # INFO logs a line per request, which costs time you would measure

    def __post_init__(self) -> None:
        if self.thread_limit < 1:
            raise ValueError(f"THREAD_LIMIT={self.thread_limit}: give an integer >= 1")
        if self.log_level not in LOG_LEVELS:
            raise ValueError(f"LOG_LEVEL={self.log_level}: give one of {', '.join(LOG_LEVELS)}")
        object.__setattr__(self, "provider_url", self.provider_url.rstrip("/"))

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> "ExperimentSettings":
        """The settings in `environ`; a missing one keeps its default, a bad one is a ValueError."""
        thread_limit = environ.get("THREAD_LIMIT", str(DEFAULT_THREAD_LIMIT))
        if not thread_limit.strip().isdigit():
            raise ValueError(f"THREAD_LIMIT={thread_limit}: give an integer >= 1")
        return cls(
            provider_url=environ.get("PROVIDER_URL", DEFAULT_PROVIDER_URL),
            thread_limit=int(thread_limit),
            log_level=environ.get("LOG_LEVEL", "WARNING").upper(),
        )

    def environment(self) -> dict[str, str]:
        """The settings as the environment variables that from_environment() reads."""
        return {"PROVIDER_URL": self.provider_url, "THREAD_LIMIT": str(self.thread_limit), "LOG_LEVEL": self.log_level}
