"""Streamable HTTP: the SDK's app behind a guard, served by uvicorn on a socket bound here.

The guard answers before the SDK sees a request:

* `Origin` (sent by browsers) must name this server: a loopback origin when the server listens
  on loopback, else the address it listens on. A web page elsewhere that makes a browser talk
  to the server (DNS rebinding: evil.example resolving to 127.0.0.1) is refused, 403.
* `Host` must name the server too when it listens on loopback (the same attack's other half).
* When a token is configured (`OBSREPO_MCP_TOKEN`, required for any address other than
  loopback) every request must carry `Authorization: Bearer <token>`, else 401.

Refusals are JSON error envelopes (docs/design.md §7).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
import sys
from typing import Any
from urllib.parse import urlsplit

from ..errors import EnvironmentFault, UsageError

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
TOKEN_VARIABLE = "OBSREPO_MCP_TOKEN"
PATH = "/mcp"


def is_loopback(host: str) -> bool:
    if host.strip("[]") in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_for(host: str, environ: dict[str, str]) -> str | None:
    """The bearer token every request must carry (None: none needed). Refuses a non-loopback
    address without one, and an empty one."""
    token = environ.get(TOKEN_VARIABLE)
    if token is not None and not token.strip():
        raise UsageError(f"{TOKEN_VARIABLE} is set but empty", parameter=TOKEN_VARIABLE)
    if token is None and not is_loopback(host):
        raise UsageError(f"serving on {host}, which is not a loopback address, needs a bearer token: set {TOKEN_VARIABLE} "
                         "(clients send it as Authorization: Bearer …)", parameter=TOKEN_VARIABLE)
    return token


def _refusal(status: int, code: str, message: str, extra: tuple[tuple[bytes, bytes], ...] = ()) -> tuple[int, list, bytes]:
    body = json.dumps({"error": {"code": code, "message": message, "details": {}}}).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
    return status, headers, body


class Guard:
    """ASGI middleware: Origin, Host and bearer token, checked on every HTTP request."""

    def __init__(self, app: Any, host: str, port: int, token: str | None) -> None:
        self.app = app
        self.loopback = is_loopback(host)
        self.host = host.strip("[]").lower()
        self.port = port
        self.token = token

    def _origin_ok(self, origin: str) -> bool:
        try:
            parts = urlsplit(origin)
            hostname = (parts.hostname or "").lower()
            port = parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https"):
            return False
        if self.loopback:
            return is_loopback(hostname)
        return hostname == self.host and port in (self.port, None)

    def _host_ok(self, host: str) -> bool:
        if not self.loopback:
            return True  # any name may reach a public address; the token guards it
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return is_loopback(name.strip("[]").lower())

    def check(self, headers: dict[bytes, bytes]) -> tuple[int, list, bytes] | None:
        origin = headers.get(b"origin")
        if origin is not None and not self._origin_ok(origin.decode("latin-1")):
            return _refusal(403, "VALIDATION_ERROR", "this Origin may not use the server (DNS rebinding protection)")
        host = headers.get(b"host", b"").decode("latin-1")
        if not self._host_ok(host):
            return _refusal(421, "VALIDATION_ERROR", "this Host does not name the server (DNS rebinding protection)")
        if self.token is not None:
            given = headers.get(b"authorization", b"").decode("latin-1")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token.encode()):
                return _refusal(401, "VALIDATION_ERROR", "a valid bearer token is required (Authorization: Bearer …)",
                                ((b"www-authenticate", b'Bearer realm="obsrepo"'),))
        return None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers: dict[bytes, bytes] = {}
            for key, value in scope.get("headers", []):
                headers.setdefault(key.lower(), value)
            refused = self.check(headers)
            if refused is not None:
                status, response_headers, body = refused
                await send({"type": "http.response.start", "status": status, "headers": response_headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port). An address that cannot be used (taken, not
    this machine's) is ENVIRONMENT_ERROR, exit 4, naming it."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host} does not resolve: {exc.strerror or exc}", parameter="--host") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise EnvironmentFault(f"cannot listen on {host}:{port}: {exc.strerror or exc}", code="ENVIRONMENT_ERROR",
                               host=host, port=port) from None
    return sock


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
