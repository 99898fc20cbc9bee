"""The lab's errors, and the one place they become HTTP responses.

LabError                      status  error code
├── ProviderBusy               503    ai_busy          (the provider answered 429)
├── ProviderUnavailable        502    ai_unavailable   (5xx, refused, or an answer we cannot use)
├── ProviderTimeout            504    ai_timeout
├── DatabaseBusy               503    db_busy          (no free connection within DB_POOL_TIMEOUT_S)
├── DatabaseUnavailable        503    db_unavailable
├── CustomerNotFound           404    customer_not_found
├── TicketNotFound             404    ticket_not_found
└── IdempotencyKeyReused       422    idempotency_key_reused
StartupError                   (not HTTP: the process stops with its one-line message)
"""

import logging
from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from ticket_api.models import ErrorBody

log = logging.getLogger("ticket_api")


class StartupError(Exception):
    """The API cannot start; the message is one line that says why and what to do."""


class LabError(Exception):
    """An error with a stable code that the API answers as `{"error": code, "detail": text}`.

    `detail` is for the client: what failed, nothing of the server's insides. `cause` (the library's
    own message: hosts, sockets, users) goes only to the API's log.
    """

    status = 500
    code = "internal_error"

    def __init__(self, detail: str, retry_after: float | None = None, cause: str | None = None):
        super().__init__(detail)
        self.detail = detail
        self.retry_after = retry_after
        self.cause = cause


class ProviderBusy(LabError):
    status, code = 503, "ai_busy"


class ProviderUnavailable(LabError):
    status, code = 502, "ai_unavailable"


class ProviderTimeout(LabError):
    status, code = 504, "ai_timeout"


class DatabaseBusy(LabError):
    status, code = 503, "db_busy"


class DatabaseUnavailable(LabError):
    status, code = 503, "db_unavailable"


class CustomerNotFound(LabError):
    status, code = 404, "customer_not_found"


class TicketNotFound(LabError):
    status, code = 404, "ticket_not_found"


class IdempotencyKeyReused(LabError):
    status, code = 422, "idempotency_key_reused"


def describe(exc: BaseException) -> str:
    """An exception as `Type: message` on one line: the cause of a LabError, for the API's log."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def error_response(status: int, code: str, detail: object, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The lab's error body: `{"error": CODE, "detail": TEXT}`."""
    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)


async def _lab_error(request: Request, exc: LabError) -> JSONResponse:
    request.state.error_code = exc.code  # for the tickets-by-outcome metric
    if exc.cause is not None:
        log.warning("%s %s: %s: %s", request.method, request.url.path, exc.code, exc.cause)
    headers = None
    if exc.retry_after is not None:
        headers = {"Retry-After": str(max(1, round(exc.retry_after)))}
    return error_response(exc.status, exc.code, exc.detail, headers)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    request.state.error_code = "validation_error"
    fields = [{"loc": list(error["loc"]), "msg": error["msg"], "type": error["type"]} for error in exc.errors()]
    return error_response(422, "validation_error", fields)


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large", 415: "unsupported_media_type"}


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    if exc.status_code == 400 and isinstance(exc.__cause__, ClientDisconnect):
        # The client left before its body arrived: nobody reads this
        # answer (nginx's 499), but the request log and the metrics say what happened.
        request.state.error_code = "client_disconnected"
        detail = "the client closed the connection before its body arrived"
        return error_response(499, "client_disconnected", detail)
    if exc.status_code == 400:
        # FastAPI's answer to a body it cannot decode (not UTF-8, nested too deep): bad JSON like any
        # other, so the same 422 validation_error as a syntax error, not a second code for one mistake.
        request.state.error_code = "validation_error"
        field = {"loc": ["body"], "msg": "the body is not valid JSON in UTF-8", "type": "json_invalid"}
        return error_response(422, "validation_error", [field])
    code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    request.state.error_code = code  # for the tickets-by-outcome metric
    return error_response(exc.status_code, code, exc.detail, exc.headers)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "an unexpected error; the API log has the details")


_DOCUMENTED = {
    404: "`customer_not_found`, `ticket_not_found`",
    413: "`body_too_large`: the request body is over 64 KiB",
    422: "`validation_error` (`detail` lists the fields), `idempotency_key_reused`",
    502: "`ai_unavailable`",
    503: "`ai_busy` (with `Retry-After`), `db_busy`, `db_unavailable`",
    504: "`ai_timeout`",
}


def documented(*statuses: int) -> dict:
    """The `responses=` of a route: the lab's error body under each status it may answer, for /docs."""
    return {status: {"model": ErrorBody, "description": _DOCUMENTED[status]} for status in statuses}


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error with the lab's JSON body and a stable code, never a traceback."""
    # Starlette types a handler as taking any Exception, though it calls each with its own class only.
    app.add_exception_handler(LabError, _lab_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected_error)
