"""What every HTTP adapter (the inspector, the MCP server over HTTP) does before a request
reaches it: where it listens, whether it needs a bearer token, and the DNS rebinding checks.

* Loopback by default; any other address needs a bearer token from the adapter's environment
  variable (else a usage error before anything listens). A token set but empty fails closed.
* `Origin` (sent by browsers) must name the server: a loopback origin when it listens on
  loopback, else its own address (403). A page elsewhere cannot make a browser read it.
* `Host` must be a loopback name when it listens on loopback (421): DNS rebinding's other half.
* With a token, every request carries `Authorization: Bearer <token>` (401 otherwise).

One home for both adapters, so a fix to a check reaches both. Plain functions and values: no web
framework is imported here (each adapter wraps `Checks` in its own ASGI middleware).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import EnvironmentFault, UsageError

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
Refusal = tuple[int, str, tuple[tuple[bytes, bytes], ...]]  # status, message, extra headers


def is_loopback(host: str) -> bool:
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def token_for(host: str, environ: Mapping[str, str], variable: str, senders: str = "clients") -> str | None:
    """The bearer token every request must carry (None: none needed), from `environ[variable]`.
    A non-loopback address without one is refused, and so is a token set but empty."""
    token = environ.get(variable)
    if token is not None and not token.strip():
        raise UsageError(f"{variable} is set but empty", parameter=variable)
    if token is None and not is_loopback(host):
        raise UsageError(f"serving on {host}, which is not a loopback address, needs a bearer token: set {variable} "
                         f"({senders} send it as Authorization: Bearer …)", parameter=variable)
    return token


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port). A name that does not resolve is a usage error
    naming the field `host`; an address that cannot be used (taken, not this machine's) is an
    environment error naming it (exit 4)."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"host {host} does not resolve: {exc.strerror or exc}", parameter="host") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise EnvironmentFault(f"cannot listen on {host}:{port}: {exc.strerror or exc}", host=host, port=port) from None
    return sock


@dataclass(frozen=True)
class Checks:
    """The checks of one listening server: `host` and `port` where it listens, `token` the one
    every request must carry (None: none)."""

    host: str
    port: int
    token: str | None

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def origin_ok(self, origin: str) -> bool:
        try:
            parts = urlsplit(origin)
            hostname, port = (parts.hostname or "").lower(), parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https"):
            return False
        if self.loopback:
            return is_loopback(hostname)
        return hostname == self.host.strip("[]").lower() and port in (self.port, None)

    def host_ok(self, host: str) -> bool:
        if not self.loopback:
            return True  # any name may reach a public address; the token guards it
        try:
            name = urlsplit(f"//{host}").hostname or ""
        except ValueError:
            return False
        return is_loopback(name)

    def refusal(self, headers: Mapping[bytes, bytes]) -> Refusal | None:
        """(status, message, extra headers) of a request refused, None for one let through;
        `headers` by lower-case name, the first of each."""
        origin = headers.get(b"origin")
        if origin is not None and not self.origin_ok(origin.decode("latin-1")):
            return 403, "this Origin may not use the server (DNS rebinding protection)", ()
        if not self.host_ok(headers.get(b"host", b"").decode("latin-1")):
            return 421, "this Host does not name the server (DNS rebinding protection)", ()
        if self.token is not None:
            scheme, _, value = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self.token.encode()):
                return 401, "a valid bearer token is required (Authorization: Bearer …)", \
                    ((b"www-authenticate", b'Bearer realm="obsrepo"'),)
        return None


def first_headers(raw: list[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    """An ASGI scope's headers by lower-case name, the first of each (a repeated Host or
    Origin cannot slip a second value past the checks)."""
    headers: dict[bytes, bytes] = {}
    for key, value in raw:
        headers.setdefault(key.lower(), value)
    return headers


async def refuse(send: Callable[[dict[str, Any]], Awaitable[None]], refused: Refusal,
                 more_headers: tuple[tuple[bytes, bytes], ...] = (), head: bool = False) -> None:
    """Answer a refused ASGI request with the JSON error envelope (docs/design.md §7); `head`:
    the headers only."""
    status, message, extra = refused
    body = json.dumps({"error": {"code": "VALIDATION_ERROR", "message": message, "details": {}}}).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *extra, *more_headers]})
    await send({"type": "http.response.body", "body": b"" if head else body})
