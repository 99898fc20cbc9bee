"""Settings: one class, read from the environment and a `.env` file (the environment wins)."""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ticket_api.errors import StartupError
from ticket_api.instruments.startup import api_root, describe_invalid_setting, header_safe, postgres_url

HOUR_S = 3600  # the longest any timeout may be: a bound, so that `inf` or `1e400` cannot get through


class Settings(BaseSettings):
    """Every setting of the ticket API; each description is the README settings table's "Meaning" for it."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    database_url: Annotated[str | None, AfterValidator(postgres_url)] = Field(
        None,
        description="`postgresql://user:password@host:port/dbname` (or libpq's `host=... dbname=...`) of your own "
        "PostgreSQL; unset, empty or blank = the embedded server in `.lab/pgdata`",
    )
    db_pool: bool = Field(
        True,
        description="`false` opens a fresh connection for every use (the course's no-pool baseline)",
    )
    db_pool_min_size: int = Field(2, ge=0, le=1000, description="connections the pool keeps open")
    db_pool_max_size: int = Field(10, ge=1, le=1000, description="connections the pool may open")
    db_pool_timeout_s: float = Field(
        5.0,
        gt=0,
        le=HOUR_S,
        description="how long a request waits for a free connection before 503 `db_busy`",
    )
    provider_url: Annotated[str, AfterValidator(api_root)] = Field(
        "http://127.0.0.1:8100/v1",
        description="the OpenAI-compatible provider's API root, ending in `/v1` (`python -m simulator` serves this); "
        "no user or password in it",
    )
    provider_api_key: Annotated[SecretStr, AfterValidator(header_safe)] = Field(
        SecretStr("sk-lab-local"),
        description="sent as a bearer token, so printable ASCII without spaces; a secret: never printed or logged",
    )
    provider_timeout_s: float = Field(30.0, gt=0, le=HOUR_S, description="per provider call; past it, 504 `ai_timeout`")
    provider_max_connections: int = Field(
        1024,
        ge=1,
        le=100_000,
        description="HTTP connections to the provider per client; a call that cannot get one within "
        "`PROVIDER_TIMEOUT_S` fails: 504 `ai_timeout` (`acall`), 503 `ai_busy` (`call`)",
    )
    provider_max_concurrency: int = Field(
        0,
        ge=0,
        le=100_000,
        description='provider calls in flight at most (0 = no limit); Module 2, "Dependency limits"',
    )
    thread_limit: int = Field(
        40,
        ge=1,
        le=10_000,
        description="tokens of AnyIO's default thread limiter (FastAPI's thread pool), applied at start-up",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO",
        description="`DEBUG`, `INFO`, `WARNING` or `ERROR`",
    )
    loop_watchdog_ms: int = Field(
        250,
        ge=0,
        le=60_000,
        description="log the line that blocks the event loop for longer than this (0 = off)",
    )
    intake_mode: Literal["thread", "blocking", "async"] = Field(
        "async",
        description="`thread`, `blocking` or `async`: how `POST /v1/tickets` waits",
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


def load_settings(**overrides: Any) -> Settings:
    """Read the settings; a bad value raises StartupError with one line naming the variable."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise StartupError(describe_invalid_setting(exc)) from None
