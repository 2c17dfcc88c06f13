"""The inspector (docs/design.md §17): a read-only web view of the reduced truth for people.

    guard.py     method, then Origin, Host and bearer token (ops/web.py); the security headers
    app.py       the Starlette routes, the templates, errors as HTTP statuses
    pages.py     each page's questions to the door, and its JSON twin
    words.py     how values, times and the rule that decided read on a page
    markdown.py  bodies as HTML with raw HTML off and only http, https and mailto links
    links.py     where links lead: the server's pages, or the static preview's files
    preview.py   --static: a change's review and the pages it touches, written as files

An adapter: it imports `obsrepo.ops` and `obsrepo.errors` only (an import-linter contract
keeps it so). Starlette, Jinja2, markdown-it-py and uvicorn (the serve extra) load when `serve`
runs, never with the package.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from ..ops import Session
from ..ops.web import bind
from .guard import Guard, token_for


def serve(session: Session, *, host: str, port: int, at: str | None, environ: Mapping[str, str]) -> None:
    """Serve the inspector until interrupted. The token is checked before anything listens;
    `at` is resolved once, so a name that is not one commit fails at the start (§8a)."""
    import jinja2  # noqa: F401 - the whole serve extra, before anything listens: a missing part is an install hint
    import markdown_it  # noqa: F401
    import starlette  # noqa: F401
    import uvicorn

    from .app import application, settle

    token = token_for(host, environ)
    pinned = session.rev(at, "at").sha if at is not None else None
    app = application(session, pinned)
    session.keep_open()
    # the index at HEAD before anything listens: the first page answers at once, and an index
    # that cannot be opened (its extra missing, say) is reported at start, not on every page
    session.read(lambda scope: None, scoped=False)
    settle()
    sock = bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    print(f"obsrepo serve: http://{shown}:{sock.getsockname()[1]}/" + (" (bearer token required)" if token else ""),
          file=sys.stderr, flush=True)
    try:
        uvicorn.Server(uvicorn.Config(Guard(app, host, sock.getsockname()[1], token), log_level="warning",
                                      lifespan="off")).run(sockets=[sock])
    finally:
        session.close()


def static_preview(session: Session, *, directory: str, given_range: str) -> dict:
    """Write the static preview of `given_range` into `directory` (preview.py); no server."""
    import jinja2  # noqa: F401 - the extra's parts the pages need: a missing one is an install hint
    import markdown_it  # noqa: F401

    from .preview import write_preview

    return write_preview(session, directory, given_range)
