"""The lab's errors: each one the API answers with its status and a stable code (instruments/error_answers.py).

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
