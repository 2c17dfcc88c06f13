"""What every request meets before a page: the checks of docs/design.md §17, and the headers
every answer carries.

* Only GET and HEAD: the inspector is read-only (405 otherwise, `Allow: GET, HEAD`).
* `Origin` (sent by browsers) must name this server: a loopback origin when it listens on
  loopback, else its own address (403). A page elsewhere cannot make a browser read it.
* `Host` must be a loopback name when it listens on loopback (421): DNS rebinding's other half.
* With a token (`OBSREPO_SERVE_TOKEN`, required for any address but loopback) every request
  carries `Authorization: Bearer <token>` (401 otherwise).

Every answer carries a Content-Security-Policy that allows nothing but the server's own files (no
inline script or style, no other origin), and is never framed, sniffed or given a referrer.
Refusals are the JSON error envelope (docs/design.md §7).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..errors import UsageError

TOKEN_VARIABLE = "OBSREPO_SERVE_TOKEN"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
METHODS = ("GET", "HEAD")
SECURITY_HEADERS = (
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                                 b"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
)


def is_loopback(host: str) -> bool:
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def token_for(host: str, environ: Mapping[str, str]) -> str | None:
    """The bearer token every request must carry (None: none needed). A non-loopback address
    without one is refused, and so is a token set but empty (fail closed)."""
    token = environ.get(TOKEN_VARIABLE)
    if token is not None and not token.strip():
        raise UsageError(f"{TOKEN_VARIABLE} is set but empty", parameter=TOKEN_VARIABLE)
    if token is None and not is_loopback(host):
        raise UsageError(f"serving on {host}, which is not a loopback address, needs a bearer token: set {TOKEN_VARIABLE} "
                         "(browsers and scripts send it as Authorization: Bearer …)", parameter=TOKEN_VARIABLE)
    return token


class Guard:
    """ASGI middleware: method, Origin, Host and token checked on every HTTP request; the
    security headers added to every answer."""

    def __init__(self, app: Any, host: str, port: int, token: str | None) -> None:
        self.app = app
        self.loopback = is_loopback(host)
        self.host = host.strip("[]").lower()
        self.port = port
        self.token = token

    def _origin_ok(self, origin: str) -> bool:
        try:
            parts = urlsplit(origin)
            hostname, port = (parts.hostname or "").lower(), parts.port
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
        try:
            name = urlsplit(f"//{host}").hostname or ""
        except ValueError:
            return False
        return is_loopback(name)

    def refusal(self, method: str, headers: Mapping[bytes, bytes]) -> tuple[int, str, tuple] | None:
        """(status, message, extra headers) of a request refused, None for one let through."""
        origin = headers.get(b"origin")
        if origin is not None and not self._origin_ok(origin.decode("latin-1")):
            return 403, "this Origin may not use the server (DNS rebinding protection)", ()
        if not self._host_ok(headers.get(b"host", b"").decode("latin-1")):
            return 421, "this Host does not name the server (DNS rebinding protection)", ()
        if self.token is not None:
            scheme, _, value = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token.encode()):
                return 401, "a valid bearer token is required (Authorization: Bearer …)", \
                    ((b"www-authenticate", b'Bearer realm="obsrepo"'),)
        if method not in METHODS:
            return 405, f"the inspector is read-only: {method} is not allowed (GET, HEAD)", ((b"allow", b"GET, HEAD"),)
        return None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(key.lower(), value)
        refused = self.refusal(scope["method"], headers)
        if refused is not None:
            status, message, extra = refused
            body = json.dumps({"error": {"code": "VALIDATION_ERROR", "message": message, "details": {}}}).encode()
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                    *extra, *SECURITY_HEADERS]})
            await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
            return

        async def secured(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, secured)
