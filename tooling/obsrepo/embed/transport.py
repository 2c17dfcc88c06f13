"""One POST to an embedding server, bounded as docs/design.md §8b says.

    reply = post(url, body, headers, seconds=30.0)   # Reply(status, location, body)

- **Never redirected.** A 3xx is handed back as it came (its `Location`), never followed: the
  key in the headers goes only to the origin it was configured for.
- **One deadline for the whole request.** A socket's timeout bounds each read, so a server
  that sends a byte a second would hold a caller for as long as it likes; here a timer shuts
  the request's sockets down when `seconds` have passed since it began (connect, TLS
  handshake, send, headers and the complete body alike), and `TimedOut` is raised.
- **A bounded body.** More than `MAX_BODY` bytes is `TooLarge`, whatever the server says of
  its length.

Proxies configured in the environment are used as the standard library uses them.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

MAX_BODY = 64 * 1024 * 1024
ERROR_DETAIL = 300  # bytes of a refusal's body kept for the message


class TimedOut(Exception):
    """The request did not complete within its deadline."""


class TooLarge(Exception):
    """The answer's body is larger than MAX_BODY."""


class Unreachable(Exception):
    """The server could not be reached, or broke the connection; the reason is the message."""


@dataclass(frozen=True)
class Reply:
    status: int
    location: str | None  # a redirect's target, as the server wrote it
    body: bytes  # all of it for a 2xx, the first ERROR_DETAIL bytes otherwise


def post(url: str, body: bytes, headers: dict[str, str], seconds: float) -> Reply:
    deadline = _Deadline(seconds)
    opener = urllib.request.build_opener(_NoRedirect(), _Plain(deadline), _Secure(deadline))
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        try:
            with opener.open(request, timeout=deadline.left()) as response:
                body = _read(response)
                if deadline.expired:  # the timer shut the socket: what came is not the whole answer
                    raise TimedOut()
                return Reply(response.status, None, body)
        except urllib.error.HTTPError as refused:
            try:
                detail = refused.read(ERROR_DETAIL) if refused.fp is not None else b""
            finally:
                refused.close()
            return Reply(refused.code, refused.headers.get("Location"), detail)
    except (TooLarge, TimedOut):
        raise
    except Unreachable:
        if deadline.expired:
            raise TimedOut() from None
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if deadline.expired or _is_timeout(exc):
            raise TimedOut() from None
        raise Unreachable(_reason(exc)) from None
    finally:
        deadline.cancel()


def _read(response: Any) -> bytes:
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.strip().isdigit() and int(declared) > MAX_BODY:
        raise TooLarge()
    chunks, total = [], 0
    while chunk := response.read(1 << 16):
        total += len(chunk)
        if total > MAX_BODY:
            raise TooLarge()
        chunks.append(chunk)
    if declared is not None and declared.strip().isdigit() and total < int(declared):
        raise Unreachable(f"the connection closed after {total} of the {int(declared)} bytes announced")
    return b"".join(chunks)


def _is_timeout(exc: BaseException) -> bool:
    return isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None), TimeoutError)


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    return str(reason) or type(reason).__name__


class _Deadline:
    """A timer that shuts down every socket of one request when its time is up (a socket's
    own timeout, set to what is left, bounds a connect that has no socket to shut yet)."""

    def __init__(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0 or self.expired:
            raise TimeoutError()
        return left

    def watch(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            if self.expired:
                _shut(sock)
            else:
                self._sockets.append(sock)
        return sock

    def cancel(self) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    """Wake whoever reads or writes `sock` (the plain socket's shutdown, also under TLS)."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


def _bounded(base: type[http.client.HTTPConnection], deadline: _Deadline) -> Any:
    """`base`, its sockets watched by `deadline` from the moment they exist."""

    class Bounded(base):  # type: ignore[valid-type, misc]
        def __init__(self, host: str, **kwargs: Any) -> None:
            super().__init__(host, **kwargs)
            self._create_connection = lambda *a, **k: deadline.watch(socket.create_connection(*a, **k))

        def connect(self) -> None:
            self.timeout = deadline.left()
            if not isinstance(self, http.client.HTTPSConnection):
                super().connect()
                return
            http.client.HTTPConnection.connect(self)  # TCP (and a proxy's tunnel); TLS below, watched too
            server = self._tunnel_host or self.host
            tls = self._context.wrap_socket(self.sock, server_hostname=server, do_handshake_on_connect=False)  # type: ignore[has-type]
            self.sock = deadline.watch(tls)
            tls.do_handshake()

    return Bounded


class _Plain(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: Any) -> Any:
        return self.do_open(_bounded(http.client.HTTPConnection, self._deadline), req)


class _Secure(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: Any) -> Any:
        import ssl

        return self.do_open(_bounded(http.client.HTTPSConnection, self._deadline), req, context=ssl.create_default_context())


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Every 3xx comes back to the caller as an HTTPError: nothing is sent to its Location."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None
