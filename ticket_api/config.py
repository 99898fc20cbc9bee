"""Settings: one class, read from the environment and a `.env` file (the environment wins)."""

from typing import Literal

import psycopg
from psycopg.conninfo import conninfo_to_dict
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ticket_api.errors import StartupError


class Settings(BaseSettings):
    """Every setting of the ticket API; the README has the same list as a table."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    database_url: str | None = None
    db_pool: bool = True
    db_pool_min_size: int = Field(2, ge=0)
    db_pool_max_size: int = Field(10, ge=1)
    db_pool_timeout_s: float = Field(5.0, gt=0)
    provider_url: str = "http://127.0.0.1:8100/v1"
    provider_api_key: SecretStr = SecretStr("sk-lab-local")
    provider_timeout_s: float = Field(30.0, gt=0)
    provider_max_connections: int = Field(1024, ge=1)
    provider_async_client: Literal["aiohttp", "httpx"] = "aiohttp"
    provider_max_concurrency: int = Field(0, ge=0)
    thread_limit: int = Field(40, ge=1)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    loop_watchdog_ms: int = Field(250, ge=0)
    lab_routes: bool = True
    intake_mode: Literal["thread", "blocking", "async"] = "async"

    @field_validator("database_url")
    @classmethod
    def _postgres_only(cls, value: str | None) -> str | None:
        if not value:
            return None
        if "://" in value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("expected postgresql://user:password@host:port/dbname, or unset for the embedded server")
        try:
            conninfo_to_dict(value)
        except psycopg.ProgrammingError:
            raise ValueError("not a PostgreSQL URL or connection string") from None
        return value

    @field_validator("provider_url")
    @classmethod
    def _http_only(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


def load_settings(**overrides: object) -> Settings:
    """Read the settings; a bad value raises StartupError with one line naming the variable."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        raise StartupError(describe_invalid_setting(exc)) from None


def describe_invalid_setting(exc: ValidationError) -> str:
    """One line for the first invalid setting: the variable, the bad value and what is allowed."""
    error = exc.errors()[0]
    name = str(error["loc"][0]).upper() if error["loc"] else "settings"
    shown = "(hidden)" if name == "PROVIDER_API_KEY" else repr(error.get("input"))
    allowed = error["msg"].removeprefix("Value error, ")
    if error["type"] == "literal_error":
        allowed = "expected " + error["ctx"]["expected"]
    elif error["type"].startswith("bool_"):
        allowed = "expected true or false"
    return f"invalid setting {name}={shown}: {allowed}"
