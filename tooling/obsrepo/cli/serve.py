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
                              "OBSREPO_SERVE_TOKEN=$(openssl rand -hex 32) obsrepo serve --host 0.0.0.0",
                              "obsrepo serve --static preview origin/main..HEAD"))
@click.argument("given_range", metavar="[BASE..HEAD]", required=False)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on. Anything but loopback needs OBSREPO_SERVE_TOKEN.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port (0: any free port).")
@click.option("--at", metavar="REV", help="Show the repository as it was at REV (a page's ?at= still chooses another).")
@click.option("--static", "static_dir", metavar="DIR",
              help="Write the review of BASE..HEAD and the pages it touches into DIR as files, and exit (no server).")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS), help="Show nothing classified above this level.")
@read_options
@handled
def serve(given_range: str | None, host: str, port: int, at: str | None, static_dir: str | None,
          max_classification: str | None, tenant: str | None, index_path: str | None) -> int:
    """Browse the repository in a web browser: search, entities, observations, reviews.

    Pages for people (server-rendered, no script needed) and the same answers as JSON (a
    page's URL with .json). Read-only; the tenant binding and the ceiling come from these
    options only, never from a URL. Needs the serve extra.

    With --static DIR BASE..HEAD it serves nothing: it writes the review page of the change
    (DIR/index.html) and the pages of every entity, observation and belief it touches, with
    relative links, for a pull request's artifact.
    """
    if (static_dir is None) != (given_range is None):
        raise errors.UsageError("--static DIR and BASE..HEAD go together: obsrepo serve --static DIR BASE..HEAD",
                                parameter="--static")
    door = Session(os.getcwd(), index=index_path, binding=Binding.configured(tenant, "tenant"),
                   ceiling=Ceiling.parse(max_classification, "max_classification"))
    if static_dir is not None and given_range is not None:
        from ..serve import static_preview

        try:
            written = static_preview(door, directory=static_dir, given_range=given_range)
        except errors.ObsrepoError as exc:
            raise exc.renamed({"static": "--static", "range": "BASE..HEAD", "base": "BASE", "head": "HEAD"}) from None
        click.echo(f"obsrepo serve: wrote {written['pages']} pages into {written['directory']} "
                   f"(open {os.path.join(written['directory'], 'index.html')})")
        return errors.EXIT_OK
    from ..serve import serve as run_server

    run_server(door, host=host, port=port, at=at, environ=os.environ)
    return errors.EXIT_OK
