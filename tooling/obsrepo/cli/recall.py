"""`obsrepo recall`: the session memory block (docs/design.md §15)."""

from __future__ import annotations

import click

from .. import errors
from ..ops import Recall, run
from ..ops.surface import CLASSIFICATIONS
from .app import main
from .declare import offered, options_of
from .errors import _emit_json, handled
from .options import embedder_option, examples, read_options, session


@main.command(epilog=examples("obsrepo recall --entity company/acme", "obsrepo recall --scope task/42 --text \"payment overdue\"",
                              "obsrepo recall --budget 500 --tenant org=northwind --format json"))
@click.option("--entity", "entities", multiple=True, metavar="TYPE/KEY",
              help="An entity the block is about (repeatable); its snapshot comes first.")
@click.option("--scope", "scopes", multiple=True, help="A scope id (repeatable; matches ANY): its observations and their entities.")
@click.option("--text", help="What the session is about: observations are ranked by it (hybrid with an embedder, else BM25).")
@click.option("--budget", type=int, default=2000, show_default=True,
              help="At most this many tokens, counted as characters / 4 (64..100000).")
@click.option("--at", metavar="REV", help="The repository as it was at REV.")
@options_of(Recall, offered(Recall, "as_of"))
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS),
              help="Leave out anything classified above this level.")
@embedder_option
@click.option("--format", "output_format", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True,
              help="markdown: the block to give an agent; json: the same facts as one object.")
@read_options
@handled
def recall(entities: tuple[str, ...], scopes: tuple[str, ...], text: str | None, budget: int, at: str | None,
           as_of: str | None, max_classification: str | None, embedder: str | None, output_format: str, tenant: str | None,
           index_path: str | None) -> int:
    """What an agent should know at the start of a session, cited and within a budget.

    The snapshots of the entities in scope (each field with the observation that decided it),
    the beliefs that cite them, then the most relevant observations; every fact line cites
    OBSERVATION_ID@COMMIT. The same commit, options and embedder give the same bytes.
    """
    request = Recall(entities=entities, scopes=scopes, text=text, budget=budget, at=at, as_of=as_of,
                     max_classification=max_classification)
    block = run(session(index_path, tenant, embedder=embedder), request)
    if output_format == "json":
        _emit_json(block.to_json())
    else:
        click.echo(block.markdown, nl=False)
    return errors.EXIT_OK
