"""What every request meets before a page: the checks of docs/design.md §17, and the headers
every answer carries.

* Only GET and HEAD: the inspector is read-only (405 otherwise, `Allow: GET, HEAD`).
* `Origin`, `Host` and the bearer token (`OBSREPO_SERVE_TOKEN`, required for any address but
  loopback): the checks every HTTP adapter shares (`ops/web.py`): 403, 421, 401.

Every answer carries a Content-Security-Policy that allows nothing but the server's own files (no
inline script or style, no other origin), and is never framed, sniffed or given a referrer.
Refusals are the JSON error envelope (docs/design.md §7).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..ops import web

TOKEN_VARIABLE = "OBSREPO_SERVE_TOKEN"
METHODS = ("GET", "HEAD")
SECURITY_HEADERS = (
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                                 b"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
)


def token_for(host: str, environ: Mapping[str, str]) -> str | None:
    """The bearer token every request must carry (None: none needed); refused before anything listens."""
    return web.token_for(host, environ, TOKEN_VARIABLE, senders="browsers and scripts")


class Guard:
    """ASGI middleware: method, Origin, Host and token checked on every HTTP request; the
    security headers added to every answer."""

    def __init__(self, app: Any, host: str, port: int, token: str | None) -> None:
        self.app = app
        self.checks = web.Checks(host, port, token)

    def refusal(self, method: str, headers: Mapping[bytes, bytes]) -> web.Refusal | None:
        """(status, message, extra headers) of a request refused, None for one let through."""
        refused = self.checks.refusal(headers)
        if refused is None and method not in METHODS:
            return 405, f"the inspector is read-only: {method} is not allowed (GET, HEAD)", ((b"allow", b"GET, HEAD"),)
        return refused

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope["method"], web.first_headers(scope.get("headers", [])))
        if refused is not None:
            await web.refuse(send, refused, SECURITY_HEADERS, head=scope["method"] == "HEAD")
            return

        async def secured(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, secured)
