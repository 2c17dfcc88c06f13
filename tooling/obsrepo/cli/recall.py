"""`obsrepo recall`: the session memory block (docs/design.md §15)."""

from __future__ import annotations

from typing import Any

import click

from ..ops import Recall
from .declare import command, flag
from .errors import _emit_json
from .options import embedder_option, output_format, read_options


@command(Recall, names={"entities": flag("--entity", metavar="TYPE/KEY"), "scopes": "--scope"},
         options=(embedder_option,
                  output_format(choices=("markdown", "json"),
                                help_text="markdown: the block to give an agent; json: the same facts as one object."),
                  read_options),
         examples=("obsrepo recall --entity company/acme", "obsrepo recall --scope task/42 --text \"payment overdue\"",
                   "obsrepo recall --budget 500 --tenant org=northwind --format json"))
def recall(block: Any, output_format: str) -> str | None:
    """What an agent should know at the start of a session, cited and within a budget.

    The snapshots of the entities in scope (each field with the observation that decided it),
    the beliefs that cite them, then the most relevant observations; every fact line cites
    OBSERVATION_ID@COMMIT. The same commit, options and embedder give the same bytes.
    """
    if output_format == "json":
        _emit_json(block.to_json())
    else:
        click.echo(block.markdown, nl=False)
    return None
