"""`obsrepo init`: make a folder a data repository, or complete one (docs/design.md §18)."""

from __future__ import annotations

import click

from .. import errors
from ..ops import Init, init
from .app import main
from .errors import _emit_json, handled
from .options import examples, output_format

_SAYS = {"created": "created", "exists": "exists ", "unchanged": "same   ", "kept": "kept   ", "extended": "added to"}


@main.command("init", epilog=examples("obsrepo init", "obsrepo init my-observations", "obsrepo init --format json"))
@click.argument("dir", default=".", required=False)
@output_format(help_text="text: one line per folder and file; json: the folders and files with what became of each.")
@handled
def init_command(dir: str, output_format: str) -> int:
    """Make DIR (default: here) a repository of observations, or complete one.

    Makes the folders (observations/, comprehension/, schemas/entities/), a pre-commit
    configuration running obsrepo's hook, a GitHub workflow running obsrepo's Action with its
    review of every pull request, an example entity schema, a README and the .gitignore line
    for the index. A file that is already there is never replaced ("kept" when it says
    something else), so init may run again. A folder in no git repository gets `git init`
    first; a folder inside a repository must be its top.
    """
    done = init(Init(dir)).to_json()
    if output_format == "json":
        _emit_json(done)
        return errors.EXIT_OK
    if done["git_init"]:
        click.echo(f"git init   {done['root']} (it was in no git repository)")
    for item in done["folders"] + done["files"]:
        note = " (yours: left as it is)" if item["status"] == "kept" else ""
        click.echo(f"{_SAYS[item['status']]:<10} {item['path']}{note}")
    click.echo("next: pre-commit install, then commit the files (git add -A && git commit -m \"obsrepo init\")")
    return errors.EXIT_OK
