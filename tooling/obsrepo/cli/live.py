"""Commands that keep the index or serve it: index, watch, mcp."""

from __future__ import annotations

from typing import Any

import click

from .. import errors
from ..ops import Index
from ..ops.surface import plural, vectors_line
from .app import main
from .declare import Exit, Supplied, command
from .errors import _emit_json, handled
from .options import _progress_bar, embedder_option, examples, index_option, output_format, read_options, session


def _indexing(given: dict[str, Any]) -> Any:
    """The progress bar of `index`: none when quiet or answering JSON."""
    return None if given["quiet"] or given["output_format"] == "json" else _progress_bar("indexing", keep=True)


@command(Index, name="index", names={"progress": Supplied(_indexing)},
         options=(click.option("--quiet", "-q", is_flag=True, help="No progress and no warnings."), index_option,
                  embedder_option,
                  output_format(help_text="text: a summary on stderr; json: the result (commit, counts, problems) on stdout.")),
         examples=("obsrepo index", "obsrepo index --rev v1.2 --index /tmp/v1.duckdb", "obsrepo index --full --strict"))
def index_command(built: Any, quiet: bool, output_format: str, request: Index) -> Exit:
    """Build or update the index from git objects at REV.

    The other commands do this themselves when the index is missing or behind HEAD; run it to
    see the warnings about invalid documents in history, or in CI with --strict.
    """
    result = built.result
    if output_format == "json":
        _emit_json(result.as_dict())
    elif not quiet:
        for problem in result.problems:
            click.echo(f"warning: {problem.as_text()}", err=True)
        kind = "built" if result.full else "updated"
        # versions, not documents: a comprehension edited in history is one document (what
        # `check` counts in the work tree) and one version more per edit along the chain
        click.echo(f"index {kind} at {result.commit[:12]}: {plural(result.commits, 'commit')}, "
                   f"{plural(result.added, 'document version')} added, {result.removed} removed", err=True)
        if result.semantic is not None:
            click.echo(vectors_line(result.semantic), err=True)
    return Exit(errors.EXIT_PROBLEMS if request.strict and result.problems else errors.EXIT_OK)


@main.command(epilog=examples("obsrepo watch", "obsrepo watch --committed-only", "obsrepo watch --debounce 50 --max-wait 500"))
@click.option("--committed-only", is_flag=True, help="Index commits only: no overlay of uncommitted drafts.")
@click.option("--debounce", type=click.IntRange(1, 60000), default=100, show_default=True, metavar="MS",
              help="Act when no event came for this long (a burst, an editor's save, a git command).")
@click.option("--max-wait", type=click.IntRange(1, 600000), default=1000, show_default=True, metavar="MS",
              help="Act at the latest this long after the first event of a burst.")
@click.option("--quiet", "-q", is_flag=True, help="Only problems: no line per update.")
@index_option
@handled
def watch(committed_only: bool, debounce: int, max_wait: int, quiet: bool, index_path: str | None) -> int:
    """Keep the index live at the branch tip, with valid drafts as an overlay.

    Commits, checkouts, pulls, rebases and resets become one update each; a draft under
    observations/ that passes the check shows in `query` with "uncommitted": true until it is
    committed; a draft that fails is reported here (path:line:col CODE message) and never hides
    a committed document. One watcher per index. Stops cleanly on Ctrl-C or SIGTERM.
    """
    _preload(*WATCH_IMPORTS, *INDEX_IMPORTS)
    from ..watch.loop import Watcher

    Watcher(session(index_path), committed_only=committed_only, quiet=debounce / 1000, max_wait=max_wait / 1000,
            verbose=not quiet).run()
    return errors.EXIT_OK


# What the long-running commands import before they start: a missing extra stops them at once,
# named by `errors.missing_extra` in `handled`, rather than in the watcher's thread, on an MCP
# client's first call, or after the watcher has said it is watching.
INDEX_IMPORTS = ("duckdb", "duckdb_extension_fts", "pyarrow")


WATCH_IMPORTS = ("watchdog.observers",)


MCP_IMPORTS = ("anyio", "mcp.server.lowlevel", "mcp.server.stdio")


def _preload(*modules: str) -> None:
    import importlib

    for name in modules:
        importlib.import_module(name)


@main.command("mcp", epilog=examples("obsrepo mcp", "obsrepo mcp --tenant org=northwind --branch proposals/northwind",
                                     "obsrepo mcp --transport http --port 8765",
                                     "OBSREPO_MCP_TOKEN=$(openssl rand -hex 32) obsrepo mcp --transport http --host 0.0.0.0"))
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio: the client starts the server and talks over stdin/stdout; http: streamable HTTP at /mcp.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on (http). Anything but loopback needs OBSREPO_MCP_TOKEN.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port (http; 0: any free port).")
@click.option("--branch", default="obsrepo/proposals", show_default=True, metavar="BRANCH",
              help="The proposal branch the write tools commit on (made from HEAD when missing).")
@click.option("--watch", "watch_tree", is_flag=True,
              help="Run `obsrepo watch` in the server: answers include the work tree's valid drafts (\"uncommitted\": true).")
@read_options
@handled
def mcp_command(transport: str, host: str, port: int, branch: str, watch_tree: bool, tenant: str | None,
                index_path: str | None) -> int:
    """Serve the repository to agents over the Model Context Protocol.

    Agents query observations, read snapshots, provenance, relationships, timelines and
    history, check a document, and propose new observations, corrections, retractions,
    relations and merges (docs/reference/mcp.md lists the tools). Each write is one new commit on
    the proposal branch (--branch); the work tree and the checked-out branch are never
    touched, and answers come from HEAD until a proposal is merged. The index stays open and
    is brought up to HEAD before each call. With --tenant (or OBSREPO_TENANT) every answer is
    bound to that tenant and every write carries it; no tool argument can change either.
    Over http, a foreign Origin is refused, and OBSREPO_MCP_TOKEN, when set (required off
    loopback), must come with every request as a bearer token.
    """
    from ..mcp import serve

    _preload(*MCP_IMPORTS, *INDEX_IMPORTS, *(WATCH_IMPORTS if watch_tree else ()))
    watcher = None
    if watch_tree:
        from ..watch.loop import Watcher

        watcher = Watcher(session(index_path), verbose=False)
    serve(session(index_path, tenant, branch), transport=transport, host=host, port=port, watcher=watcher)
    return errors.EXIT_OK

