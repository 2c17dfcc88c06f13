"""The gate's command: `check` (CI and pre-commit)."""

from __future__ import annotations

import os
from typing import Any

import click

from .. import errors
from ..ops import Check, Session
from .declare import Exit, Supplied, argument, command
from .options import _progress_bar, output_format


@command(Check, names={"paths": argument(), "cwd": Supplied(lambda _: os.getcwd()),
                       "progress": Supplied(lambda _: _progress_bar("checking"))},
         options=(output_format(choices=("text", "json", "github"),
                                help_text="text: one line per problem; json: one report object; github: annotations for GitHub Actions."),),
         door=lambda _: Session(os.getcwd()),
         examples=("obsrepo check", "obsrepo check observations/2026/02/13/obs-20260213-102500-0001.md",
                   "obsrepo check --base origin/main --format github", "obsrepo check --staged"))
def check(checked: Any, output_format: str) -> Exit:
    """Validate documents and repository rules; exit 1 on problems.

    Checks every document of the work tree (or only PATHS, though the repository rules always
    look at the whole tree): YAML, schema, file names and folders, references, duplicates,
    relation cycles and, with --base or --staged, that no observation was changed or deleted.
    A repository without commits is checked too.
    """
    from .render import render_report

    render_report(checked.report, output_format)
    if os.environ.get("OBSREPO_DEBUG") and checked.report.read is not None:  # what the facts cache saved
        click.echo(f"obsrepo check: read {checked.report.read} of {checked.report.checked} documents", err=True)
    return Exit(errors.EXIT_OK if checked.ok else errors.EXIT_PROBLEMS)
