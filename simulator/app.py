"""The ASGI application: routes each request to its handler and turns errors into responses."""

import logging

from simulator import admin
from simulator.asgi import Request, send_error, send_json
from simulator.calls import handle_chat, handle_embeddings
from simulator.errors import ApiError, MethodNotAllowed, UnknownUrl
from simulator.replay import Recording
from simulator.settings import Settings
from simulator.simulation import Simulation

logger = logging.getLogger("simulator")


async def health(sim: Simulation, request: Request) -> None:
    """GET /health: the simulator is up."""
    await send_json(request.send, 200, {"status": "ok"})


async def list_models(sim: Simulation, request: Request) -> None:
    """GET /v1/models: the models named in the recording (any model name is accepted and echoed)."""
    models = [model_object(sim, name) for name in sim.recording.models()]
    await send_json(request.send, 200, {"object": "list", "data": models})


def model_object(sim: Simulation, name: str) -> dict:
    """One entry of the model list."""
    return {"id": name, "object": "model", "created": sim.started_at, "owned_by": "simulator"}


ROUTES = {
    "/v1/chat/completions": {"POST": handle_chat},
    "/v1/embeddings": {"POST": handle_embeddings},
    "/v1/models": {"GET": list_models},
    "/health": {"GET": health},
    "/admin/quota": {"GET": admin.get_quota, "PUT": admin.put_quota},
    "/admin/quota/reset": {"POST": admin.reset_quota},
    "/admin/stats": {"GET": admin.get_stats},
}


class SimulatorApp:
    """The raw ASGI app of `python -m simulator`."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    async def __call__(self, scope: dict, receive, send) -> None:
        """Serve one HTTP request; other ASGI scopes (lifespan, websocket) are not used."""
        if scope["type"] != "http":
            return
        request = Request(scope, receive, send)
        try:
            handler = self._route(request)
            await handler(self.sim, request)
        except ApiError as error:
            await send_error(send, error)
        except Exception:
            # A bug, not bad input: log it and still answer in OpenAI's error shape.
            logger.exception("unexpected error on %s %s", request.method, request.path)
            await send_error(send, ApiError("The simulator failed unexpectedly; see its log."))

    def stop(self) -> None:
        """Called by the server when it stops: calls still waiting answer 503 at once."""
        self.sim.stop_signal.set()

    def _route(self, request: Request):
        """The handler of the request's path and method; 404 or 405 otherwise."""
        methods = ROUTES.get(request.path)
        if methods is None:
            raise UnknownUrl(f"Unknown request URL: {request.method} {request.path}.")
        handler = methods.get(request.method)
        if handler is None:
            allow = ", ".join(methods).encode()
            raise MethodNotAllowed(
                f"Method {request.method} is not allowed on {request.path}.", headers=[(b"allow", allow)]
            )
        return handler


def build_app(settings: Settings, recording: Recording) -> SimulatorApp:
    """A ready-to-serve app with its own fresh state."""
    return SimulatorApp(Simulation(settings, recording))
