"""Two small ASGI middlewares: start-up failures as one line, and the request body size limit."""

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticket_api.errors import error_response

STARTUP_ERROR_PREFIX = "ticket_api.errors.StartupError: "
# A 413 comes before the body is all read, and the server then closes the connection: said in the
# answer, so that a client does not send its next request on it (and get no answer).
CLOSE = {"Connection": "close"}


class OneLineStartupErrors:
    """When the lifespan fails with StartupError, the server prints only its message, not a traceback."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def send_one_line(message: Message) -> None:
            # Starlette sends the whole traceback as the failure message; its last line is ours.
            if message["type"] == "lifespan.startup.failed":
                last = message.get("message", "").strip().splitlines()[-1:] or [""]
                if last[0].startswith(STARTUP_ERROR_PREFIX):
                    message = {**message, "message": last[0].removeprefix(STARTUP_ERROR_PREFIX)}
            await send(message)

        await self.app(scope, receive, send_one_line)


class BodyLimit:
    """A request body larger than `max_bytes` gets 413 `body_too_large`, announced or not.

    Not FastAPI's own `max_body_size`: a body announced too large (Content-Length) gets its answer in
    plain text, `Content Too Large`, from outside the app's error handlers: no error code, no
    `Connection: close`, and the request log would log the status the route meant to send.
    """

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        detail = f"the request body is larger than {self.max_bytes:,} bytes"
        announced = Headers(scope=scope).get("content-length", "")
        if announced.isdigit() and int(announced) > self.max_bytes:
            scope.setdefault("state", {})["error_code"] = "body_too_large"  # for the tickets-by-outcome metric
            await error_response(413, "body_too_large", detail, CLOSE)(scope, receive, send)
            return
        received = 0

        async def receive_within_limit() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                raise HTTPException(413, detail, CLOSE)  # answered by the app's error handlers
            return message

        await self.app(scope, receive_within_limit, send)
