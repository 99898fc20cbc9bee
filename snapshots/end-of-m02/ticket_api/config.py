"""Settings: one class, read from the environment and a `.env` file (the environment wins)."""

import re
from typing import Any, Literal
from urllib.parse import urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ticket_api.errors import StartupError

HOUR_S = 3600  # the longest any timeout may be: a bound, so that `inf` or `1e400` cannot get through
# The password of a PostgreSQL URL (`://user:password@`) or of a key=value string (`password=...`),
# found in any text, even a malformed one: what hide_password() replaces.
URL_PASSWORD = re.compile(r"(://[^\s/:@]*:).*@")
KEY_VALUE_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&]*)", re.IGNORECASE)


class Settings(BaseSettings):
    """Every setting of the ticket API; each description is the README settings table's "Meaning" for it."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    database_url: str | None = Field(
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
    provider_url: str = Field(
        "http://127.0.0.1:8100/v1",
        description="the OpenAI-compatible provider's API root, ending in `/v1` (`python -m simulator` serves this); "
        "no user or password in it",
    )
    provider_api_key: SecretStr = Field(
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

    @field_validator("database_url")
    @classmethod
    def _postgres_only(cls, value: str | None) -> str | None:
        value = (value or "").strip()
        if not value:
            return None  # unset, empty or blank: the embedded server
        if "://" in value and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("expected postgresql://user:password@host:port/dbname, or unset for the embedded server")
        try:
            parts = conninfo_to_dict(value)
        except psycopg.ProgrammingError:
            raise ValueError("not a PostgreSQL URL or connection string") from None
        for port in str(parts.get("port", "")).split(","):  # libpq takes a list: host1,host2 and port1,port2
            if port and not (port.isdigit() and 1 <= int(port) <= 65535):
                raise ValueError(f"the port {port!r} is not a number from 1 to 65535")
        return value

    @field_validator("provider_url")
    @classmethod
    def _api_root(cls, value: str) -> str:
        url = value.strip().rstrip("/")
        try:
            parts = urlsplit(url)
            port = parts.port  # urllib checks the range here
        except ValueError as exc:
            raise ValueError(f"not a URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must start with http:// or https:// and a host, e.g. http://127.0.0.1:8100/v1")
        if port == 0:
            raise ValueError("the port must be a number from 1 to 65535")
        if parts.username is not None or parts.query or parts.fragment:
            raise ValueError("no user, password, query or fragment: the key goes in PROVIDER_API_KEY")
        if not parts.path.endswith("/v1"):
            raise ValueError("must end with the provider's API root /v1, e.g. http://127.0.0.1:8100/v1")
        return url

    @field_validator("provider_api_key")
    @classmethod
    def _header_safe(cls, value: SecretStr) -> SecretStr:
        key = value.get_secret_value()
        if not key or not all("!" <= character <= "~" for character in key):
            raise ValueError("must be printable ASCII without spaces (it is sent in an HTTP header)")
        return value

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


def describe_invalid_setting(exc: ValidationError) -> str:
    """One line for the first invalid setting: the variable, the bad value and what is allowed."""
    error = exc.errors()[0]
    name = str(error["loc"][0]).upper() if error["loc"] else "settings"
    value = error.get("input")
    if isinstance(value, str):
        value = hide_password(value)
    shown = "(hidden)" if name == "PROVIDER_API_KEY" else repr(value)
    allowed = error["msg"].removeprefix("Value error, ")
    if error["type"] == "literal_error":
        allowed = "expected " + error["ctx"]["expected"]
    elif error["type"].startswith("bool_"):
        allowed = "expected true or false"
    return f"invalid setting {name}={shown}: {allowed}"


def hide_password(text: str) -> str:
    """The text with every password of a PostgreSQL URL or key=value string in it shown as ***."""
    return KEY_VALUE_PASSWORD.sub(r"\1***", URL_PASSWORD.sub(r"\1***@", text))
