"""Streamable HTTP: the SDK's app behind a guard, served by uvicorn on a socket bound here.

The guard answers before the SDK sees a request, with the checks every HTTP adapter shares
(`ops/web.py`): `Origin` and `Host` must name the server (DNS rebinding protection: 403, 421),
and with a token (`OBSREPO_MCP_TOKEN`, required for any address other than loopback) every
request carries `Authorization: Bearer <token>` (401). Refusals are JSON error envelopes
(docs/design.md §7).
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping
from typing import Any

from ..errors import ObsrepoError
from ..ops import web

TOKEN_VARIABLE = "OBSREPO_MCP_TOKEN"
PATH = "/mcp"
OPTION_NAMES = {"host": "--host"}


def token_for(host: str, environ: Mapping[str, str]) -> str | None:
    """The bearer token every request must carry (None: none needed); refused before anything starts."""
    return web.token_for(host, environ, TOKEN_VARIABLE)


def bind(host: str, port: int) -> socket.socket:
    try:
        return web.bind(host, port)
    except ObsrepoError as exc:
        raise exc.renamed(OPTION_NAMES) from None


class Guard:
    """ASGI middleware: Origin, Host and bearer token, checked on every HTTP request."""

    def __init__(self, app: Any, host: str, port: int, token: str | None) -> None:
        self.app = app
        self.checks = web.Checks(host, port, token)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refused = self.checks.refusal(web.first_headers(scope.get("headers", [])))
            if refused is not None:
                await web.refuse(send, refused)
                return
        await self.app(scope, receive, send)


def run_http(service: Any, host: str, port: int, token: str | None) -> None:
    import threading

    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from .server import build_server

    sock = bind(host, port)
    bound_port = sock.getsockname()[1]
    server = build_server(service)
    # the guard does the Origin and Host checks for every path; the SDK's own check is left off
    app = server.streamable_http_app(streamable_http_path=PATH, host=host,
                                     transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    threading.Thread(target=service.warm_up, daemon=True, name="obsrepo-warm-up").start()
    shown = f"[{host}]" if ":" in host else host
    print(f"obsrepo mcp: serving http://{shown}:{bound_port}{PATH}" + (" (bearer token required)" if token else ""),
          file=sys.stderr, flush=True)
    config = uvicorn.Config(Guard(app, host, bound_port, token), log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])
