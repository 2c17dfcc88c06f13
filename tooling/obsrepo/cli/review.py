"""`obsrepo diff`: what a change does to the reduced truth, for a reviewer."""

from __future__ import annotations

import json

import click

from .. import errors
from ..ops import Answer, Diff
from ..ops.surface import write_replacing
from .declare import Exit, argument, command
from .errors import _emit_json
from .options import output_format, read_options


@command(Diff, names={"base": argument(), "head": argument(), "check": None},
         options=(output_format(choices=("text", "markdown", "json"),
                                help_text="text: for a terminal; markdown: a pull request body or job summary; json: one object."),
                  click.option("--output", "output_file", metavar="PATH", help="Also write the JSON report to PATH."),
                  read_options),
         examples=("obsrepo diff", "obsrepo diff main HEAD --format markdown", "obsrepo diff HEAD~1 HEAD --format json",
                   'gh pr create --body "$(obsrepo diff --format markdown main HEAD)"'))
def diff(answer: Answer, output_format: str, output_file: str | None) -> Exit:
    """What BASE..HEAD changes in the truth, entity by entity.

    HEAD defaults to HEAD; BASE to the merge base of HEAD with the default branch
    (origin/HEAD's branch, else main, else master). Either may be any commit, a pull request's
    head on another branch included. Reports the observations added, every entity whose
    snapshot changes field by field (old → new, the winning observation, the rule that
    decided), entities created, deleted, restored and merged, observations that change
    nothing, what retractions withdraw, relations, comprehension edits, and what
    `check --base BASE` refuses in the change (then the exit code is 1).
    """
    result = answer.to_json()
    if output_file:
        write_replacing(output_file, (json.dumps(result, ensure_ascii=False) + "\n").encode("utf-8"))
    if output_format == "json":
        _emit_json(result)
    else:
        from .diff_render import render_markdown, render_text

        click.echo(render_markdown(result) if output_format == "markdown" else render_text(result), nl=output_format == "text")
    return Exit(errors.EXIT_OK if result["valid"] else errors.EXIT_PROBLEMS)

