"""The admin endpoints: read, change and reset the chat quota while the simulator runs, and read its load.

    GET  /admin/quota          -> {"requests_per_minute": N, "enabled": bool, "window_s": 60}
    PUT  /admin/quota          <- {"requests_per_minute": N}   (0 switches the quota off)
    POST /admin/quota/reset    forget every counted call (a fresh window for every key)
    GET  /admin/stats          -> {"in_flight": N, "quota_limit": N, "quota_remaining": N or null}

They answer only to loopback clients, or to a request with `Authorization: Bearer <admin token>`
when the simulator was started with --admin-token / SIM_ADMIN_TOKEN.
"""

import hmac
import ipaddress

from simulator.asgi import Request, send_json
from simulator.errors import AdminForbidden, InvalidRequest
from simulator.simulation import Simulation
from simulator.validate import parse_json_object


def is_loopback(host: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 and IPv4-mapped loopback addresses; False for anything else or unknown."""
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def admin_allowed(client_host: str | None, presented_token: str, admin_token: str | None) -> bool:
    """The admin rule: a loopback client, or the configured admin token (compared in constant time)."""
    if is_loopback(client_host):
        return True
    if not admin_token or not presented_token:
        return False
    return hmac.compare_digest(presented_token.encode(), admin_token.encode())


def check_admin(sim: Simulation, request: Request) -> None:
    """Refuse the request with 403 unless admin_allowed says yes."""
    if not admin_allowed(request.client_host(), request.bearer_token(), sim.settings.admin_token):
        raise AdminForbidden("The admin endpoints answer only to loopback clients or to the admin token.")


def quota_state(sim: Simulation) -> dict:
    """What GET /admin/quota shows."""
    return {
        "requests_per_minute": sim.quota.requests_per_minute,
        "enabled": sim.quota.enabled,
        "window_s": sim.quota.window_s,
    }


async def get_quota(sim: Simulation, request: Request) -> None:
    """GET /admin/quota: the current chat quota."""
    check_admin(sim, request)
    await send_json(request.send, 200, quota_state(sim))


async def put_quota(sim: Simulation, request: Request) -> None:
    """PUT /admin/quota: set the chat requests per minute per key (0: off); counted calls are kept."""
    check_admin(sim, request)
    body = parse_json_object(await request.body())
    value = body.get("requests_per_minute")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRequest("'requests_per_minute' must be an integer >= 0.", param="requests_per_minute")
    sim.quota.requests_per_minute = value
    await send_json(request.send, 200, quota_state(sim))


async def reset_quota(sim: Simulation, request: Request) -> None:
    """POST /admin/quota/reset: forget all counted calls, so every key has its full quota again."""
    check_admin(sim, request)
    sim.quota.reset()
    await send_json(request.send, 200, quota_state(sim))


async def get_stats(sim: Simulation, request: Request) -> None:
    """GET /admin/stats: calls under way now, and the quota left to the key that used most of it (null while off)."""
    check_admin(sim, request)
    await send_json(
        request.send,
        200,
        {
            "in_flight": sim.in_flight,
            "quota_limit": sim.quota.requests_per_minute,
            "quota_remaining": sim.quota.lowest_remaining(),
        },
    )
