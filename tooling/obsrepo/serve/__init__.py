"""The inspector (docs/design.md §17): a read-only web view of the reduced truth for people.

    guard.py     method, Origin, Host and bearer token; the security headers
    app.py       the Starlette routes, the templates, errors as HTTP statuses
    pages.py     each page's questions to the door, and its JSON twin
    words.py     how values, times and the rule that decided read on a page
    markdown.py  bodies as HTML with raw HTML off and only http, https and mailto links

An adapter: it imports `obsrepo.ops` and `obsrepo.errors` only (an import-linter contract
keeps it so). Starlette, Jinja2, markdown-it-py and uvicorn (the serve extra) load when `serve`
runs, never with the package.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping

from ..errors import EnvironmentFault, UsageError
from ..ops import Session
from .guard import Guard, token_for


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port); an address that cannot be used is an
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


def serve(session: Session, *, host: str, port: int, at: str | None, environ: Mapping[str, str]) -> None:
    """Serve the inspector until interrupted. The token is checked before anything listens;
    `at` is resolved once, so a name that is not one commit fails at the start (§8a)."""
    import jinja2  # noqa: F401 - the whole serve extra, before anything listens: a missing part is an install hint
    import markdown_it  # noqa: F401
    import starlette  # noqa: F401
    import uvicorn

    from .app import application

    token = token_for(host, environ)
    pinned = session.rev(at, "at").sha if at is not None else None
    app = application(session, pinned)
    session.keep_open()
    # the index at HEAD before anything listens: the first page answers at once, and an index
    # that cannot be opened (its extra missing, say) is reported at start, not on every page
    session.read(lambda scope: None, scoped=False)
    sock = bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    print(f"obsrepo serve: http://{shown}:{sock.getsockname()[1]}/" + (" (bearer token required)" if token else ""),
          file=sys.stderr, flush=True)
    try:
        uvicorn.Server(uvicorn.Config(Guard(app, host, sock.getsockname()[1], token), log_level="warning",
                                      lifespan="off")).run(sockets=[sock])
    finally:
        session.close()
