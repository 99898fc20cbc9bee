"""What the API says at start-up, in one line each: a failure without its traceback, an invalid setting (and why,
without its password), a provider that does not answer."""

import logging
import re
from urllib.parse import urlsplit

import httpx
import psycopg
from psycopg.conninfo import conninfo_to_dict
from pydantic import SecretStr, ValidationError
from starlette.types import Message

from ticket_api.errors import describe

log = logging.getLogger("ticket_api")
STARTUP_ERROR_PREFIX = "ticket_api.errors.StartupError: "
# The password of a PostgreSQL URL (`://user:password@`) or of a key=value string (`password=...`),
# found in any text, even a malformed one: what hide_password() replaces.
URL_PASSWORD = re.compile(r"(://[^\s/:@]*:).*@")
KEY_VALUE_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&]*)", re.IGNORECASE)


def one_line_failure(message: Message) -> Message:
    """A lifespan's `lifespan.startup.failed` with StartupError's one line, not the whole traceback Starlette sends."""
    last = message.get("message", "").strip().splitlines()[-1:] or [""]
    if last[0].startswith(STARTUP_ERROR_PREFIX):
        return {**message, "message": last[0].removeprefix(STARTUP_ERROR_PREFIX)}
    return message


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


def postgres_url(value: str | None) -> str | None:
    """DATABASE_URL's check: a PostgreSQL URL or libpq string with its ports in range; blank is None (embedded)."""
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


def api_root(value: str) -> str:
    """PROVIDER_URL's check: an http(s) URL of a host, ending in /v1, with no user, query or fragment."""
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


def header_safe(value: SecretStr) -> SecretStr:
    """PROVIDER_API_KEY's check: printable ASCII without spaces, since it goes in an HTTP header."""
    key = value.get_secret_value()
    if not key or not all("!" <= character <= "~" for character in key):
        raise ValueError("must be printable ASCII without spaces (it is sent in an HTTP header)")
    return value


def hide_password(text: str) -> str:
    """The text with every password of a PostgreSQL URL or key=value string in it shown as ***."""
    return KEY_VALUE_PASSWORD.sub(r"\1***", URL_PASSWORD.sub(r"\1***@", text))


async def warn_if_unreachable(provider_url: str) -> None:
    """A WARNING line if nothing answers at the provider's address; the API starts anyway (it may come later)."""
    try:
        async with httpx.AsyncClient(timeout=1.0) as client:
            await client.get(provider_url)
    except httpx.TransportError as exc:
        reason = describe(exc)
        log.warning("the AI provider at %s does not answer (%s): tickets get 502 ai_unavailable", provider_url, reason)
