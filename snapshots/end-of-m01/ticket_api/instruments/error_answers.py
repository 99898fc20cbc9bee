"""Every error answered as `{"error": CODE, "detail": TEXT}` with a stable code, never a traceback; codes in /docs."""

import logging
from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import Scope

from ticket_api.errors import LabError

log = logging.getLogger("ticket_api")


class FieldError(BaseModel):
    """One invalid field of a validation_error: where it is, what is wrong, pydantic's error type."""

    loc: list[str | int]
    msg: str
    type: str


class ErrorBody(BaseModel):
    """Every error answer: a stable code, and a text (or, for validation_error, the invalid fields)."""

    error: str
    detail: str | list[FieldError]


def error_response(
    scope: Scope, status: int, code: str, detail: object, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The lab's error body, `{"error": CODE, "detail": TEXT}`; the code noted in the request's state, where the
    request log reads it for the tickets-by-outcome metric (a 500 is answered outside the request log: http_500)."""
    scope.setdefault("state", {})["error_code"] = code  # request.state's own dict
    return JSONResponse({"error": code, "detail": detail}, status_code=status, headers=headers)


async def _lab_error(request: Request, exc: LabError) -> JSONResponse:
    if exc.cause is not None:
        log.warning("%s %s: %s: %s", request.method, request.url.path, exc.code, exc.cause)
    headers = None if exc.retry_after is None else {"Retry-After": str(max(1, round(exc.retry_after)))}
    return error_response(request.scope, exc.status, exc.code, exc.detail, headers)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    fields = [{"loc": list(error["loc"]), "msg": error["msg"], "type": error["type"]} for error in exc.errors()]
    return error_response(request.scope, 422, "validation_error", fields)


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large", 415: "unsupported_media_type"}


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    if exc.status_code == 400 and isinstance(exc.__cause__, ClientDisconnect):
        # The client left before its body arrived: nobody reads this
        # answer (nginx's 499), but the request log and the metrics say what happened.
        return error_response(
            request.scope, 499, "client_disconnected", "the client closed the connection before its body arrived"
        )
    if exc.status_code == 400:
        # FastAPI's answer to a body it cannot decode (not UTF-8, nested too deep): bad JSON like any
        # other, so the same 422 validation_error as a syntax error, not a second code for one mistake.
        field = {"loc": ["body"], "msg": "the body is not valid JSON in UTF-8", "type": "json_invalid"}
        return error_response(request.scope, 422, "validation_error", [field])
    code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    return error_response(request.scope, exc.status_code, code, exc.detail, exc.headers)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return error_response(request.scope, 500, "internal_error", "an unexpected error; the API log has the details")


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
