"""The request size limit: a body over 64 KiB gets 413 `body_too_large`, announced or not."""

from collections.abc import Awaitable

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ticket_api.instruments.error_answers import error_response

MAX_BODY_BYTES = 64 * 1024  # a ticket is at most ~5 KB of JSON; larger bodies get 413
# A 413 comes before the body is all read, and the server then closes the connection: said in the
# answer, so that a client does not send its next request on it (and get no answer).
CLOSE = {"Connection": "close"}


class BodyLimit:
    """ASGI middleware: a request body larger than MAX_BODY_BYTES gets 413 `body_too_large`.

    Not FastAPI's own `max_body_size`: a body announced too large (Content-Length) gets its answer in
    plain text, `Content Too Large`, from outside the app's error handlers: no error code, no
    `Connection: close`, and the request log would log the status the route meant to send.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    def __call__(self, scope: Scope, receive: Receive, send: Send) -> Awaitable[None]:
        # No frame of this middleware stays in a request's await chain (Lifetime says why): the app is handed the
        # request, with a `receive` that counts.
        if scope["type"] != "http":
            return self.app(scope, receive, send)
        detail = f"the request body is larger than {MAX_BODY_BYTES:,} bytes"
        announced = Headers(scope=scope).get("content-length", "")
        if announced.isdigit() and int(announced) > MAX_BODY_BYTES:
            return error_response(scope, 413, "body_too_large", detail, CLOSE)(scope, receive, send)
        received = 0

        async def receive_within_limit() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > MAX_BODY_BYTES:
                raise HTTPException(413, detail, CLOSE)  # answered by the app's error handlers
            return message

        return self.app(scope, receive_within_limit, send)
