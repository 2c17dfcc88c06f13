"""`obsrepo mcp`: the repository served to agents over the Model Context Protocol (docs/design.md §10).

A thin adapter over the door (`ops`), like the command line: each tool builds one operation's
request and runs it over the server's `Session`. `registry.py` declares tools (name, docstring
as description, annotations, the request's fields under the tool's argument names),
`schema.py` generates their input schemas from the requests, `tools/` holds them one module
per subject, `server.py` answers calls (results and error envelopes), `http.py` guards the
streamable HTTP transport. The tenant binding is the server's session's, from `--tenant` or
`OBSREPO_TENANT`: no tool takes one.
"""

from __future__ import annotations

import os
from typing import Any

from ..ops import Session


def serve(session: Session, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765,
          watcher: Any = None) -> None:
    """Serve `session` (its tenant binding and proposal branch already set) until the client or a signal
    ends it. `watcher` (`obsrepo mcp --watch`): a Watcher run in this process meanwhile, so
    answers include the work tree's valid drafts and the index follows every commit at once."""
    from .http import token_for
    from .server import Service, configure_logging

    token = token_for(host, dict(os.environ)) if transport == "http" else None  # refused before anything starts
    configure_logging()
    if watcher is not None:
        watcher.run_in_background()  # a second watcher of the index is refused here
    session.keep_open()
    service = Service(session)
    try:
        if transport == "http":
            from .http import run_http

            run_http(service, host, port, token)
        else:
            from .server import run_stdio

            run_stdio(service)
    finally:
        if watcher is not None:
            watcher.stop()
        session.close()
