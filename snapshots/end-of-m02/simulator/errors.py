"""Errors the simulator answers with, each carrying its HTTP status and OpenAI-style fields.

    ApiError                      any answer that is not a success
    ├── InvalidRequest      400   malformed JSON, missing fields, wrong types
    ├── AdminForbidden      403   admin call from a non-loopback client without the token
    ├── UnknownUrl          404   no such path
    ├── MethodNotAllowed    405   the path exists, the method does not
    ├── BodyTooLarge        413   request body over MAX_BODY_BYTES
    ├── RateLimited         429   over the chat quota (or forced with X-Sim-Fault)
    ├── SimulatedServerError 500  --error-rate or X-Sim-Fault: error
    ├── UpstreamFailed      502   the recording proxy could not reach the real provider
    ├── SimulatedUnavailable 503  --error-rate or X-Sim-Fault: unavailable
    └── SimulatorStopping   503   the simulator was stopped while the call waited

Handlers raise them; `simulator.asgi.send_error` turns them into a response at the edge.
"""


class ApiError(Exception):
    """An answer in OpenAI's error shape: {"error": {"message", "type", "param", "code"}}."""

    status = 500
    error_type = "server_error"
    code: str | None = None

    def __init__(self, message: str, *, param: str | None = None, headers: list | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.headers = headers or []

    def body(self) -> dict:
        """The JSON body of the error response."""
        return {"error": {"message": self.message, "type": self.error_type, "param": self.param, "code": self.code}}


class InvalidRequest(ApiError):
    status = 400
    error_type = "invalid_request_error"


class AdminForbidden(ApiError):
    status = 403
    error_type = "permission_error"
    code = "admin_forbidden"


class UnknownUrl(ApiError):
    status = 404
    error_type = "invalid_request_error"
    code = "unknown_url"


class MethodNotAllowed(ApiError):
    status = 405
    error_type = "invalid_request_error"
    code = "method_not_allowed"


class BodyTooLarge(ApiError):
    status = 413
    error_type = "invalid_request_error"
    code = "request_too_large"


class RateLimited(ApiError):
    status = 429
    error_type = "requests"
    code = "rate_limit_exceeded"


class SimulatedServerError(ApiError):
    status = 500
    error_type = "server_error"
    code = "simulated_error"


class UpstreamFailed(ApiError):
    status = 502
    error_type = "server_error"
    code = "upstream_failed"


class SimulatedUnavailable(ApiError):
    status = 503
    error_type = "server_error"
    code = "simulated_unavailable"


class SimulatorStopping(ApiError):
    status = 503
    error_type = "server_error"
    code = "simulator_stopping"
