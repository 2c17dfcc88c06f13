"""`obsrepo serve`: the inspector, a read-only web view (docs/design.md §17)."""

from __future__ import annotations

import os

import click

from .. import errors
from ..ops import Binding, Ceiling, Session
from ..ops.surface import CLASSIFICATIONS
from .app import main
from .errors import handled
from .options import examples, read_options


@main.command(epilog=examples("obsrepo serve", "obsrepo serve --at v1.2 --port 8080",
                              "obsrepo serve --tenant org=northwind --max-classification internal",
                              "OBSREPO_SERVE_TOKEN=$(openssl rand -hex 32) obsrepo serve --host 0.0.0.0"))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on. Anything but loopback needs OBSREPO_SERVE_TOKEN.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port (0: any free port).")
@click.option("--at", metavar="REV", help="Show the repository as it was at REV (a page's ?at= still chooses another).")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS), help="Show nothing classified above this level.")
@read_options
@handled
def serve(host: str, port: int, at: str | None, max_classification: str | None, tenant: str | None,
          index_path: str | None) -> int:
    """Browse the repository in a web browser: search, entities, observations, reviews.

    Pages for people (server-rendered, no script needed) and the same answers as JSON (a
    page's URL with .json). Read-only; the tenant binding and the ceiling come from these
    options only, never from a URL. Needs the serve extra.
    """
    from ..serve import serve as run_server

    door = Session(os.getcwd(), index=index_path, binding=Binding.configured(tenant, "tenant"),
                   ceiling=Ceiling.parse(max_classification, "max_classification"))
    run_server(door, host=host, port=port, at=at, environ=os.environ)
    return errors.EXIT_OK
