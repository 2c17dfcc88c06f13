"""Options and helpers every command shares: the door's Session for a command, --index,
--tenant, --at, paging, output formats, the progress bar and the JSON/text answer."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

import click

from .. import errors
from ..ops import Answer, Binding, Session
from .errors import _emit_json

FORMATS = click.Choice(["text", "json"])


def output_format(help_text: str, choices: tuple[str, ...] = ("text", "json"), default: str | None = None) -> Callable[[Any], Any]:
    """The one `--format` every command offers: its forms (the first the default unless
    `default` names another) and what each gives, in `help_text`."""
    return click.option("--format", "output_format", type=click.Choice(list(choices)), default=default or choices[0],
                        show_default=True, help=help_text)


def examples(*lines: str) -> str:
    """A command's epilog: its examples, kept line by line (click's \\b marker)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def session(index: str | None = None, tenant: str | None = None, branch: str | None = None,
            embedder: str | None = None) -> Session:
    """The door for one command: the repository around the working folder, the binding of
    --tenant (else OBSREPO_TENANT), the index of --index (else OBSREPO_INDEX), the embedder of
    --embedder (else OBSREPO_EMBEDDER)."""
    return Session(os.getcwd(), index=index, binding=Binding.configured(tenant, "tenant"),
                   progress=_progress_bar("indexing"), branch=branch, embedder=embedder)


index_option = click.option("--index", "index_path", metavar="PATH", envvar="OBSREPO_INDEX",
                            help="The index file (default .obsrepo/index.duckdb, or OBSREPO_INDEX).")


embedder_option = click.option("--embedder", metavar="PROVIDER:MODEL",
                               help="none, model2vec:<model folder>, openai:<model> or ollama:<model> (or OBSREPO_EMBEDDER).")


def tenant_for(help_text: str) -> Callable[[Any], Any]:
    """The one `--tenant` (the door's binding): what binding it does to this command, in `help_text`."""
    return click.option("--tenant", metavar="org=…[,project=…]", help=help_text)


tenant_option = tenant_for("Bind every read to this tenant (or OBSREPO_TENANT).")


def read_options(func: Callable) -> Callable:
    """The options every read command has: the tenant binding and the index file. The command
    receives them as `tenant` and `index_path`, or, under `read_session`, their Session."""
    given: Callable = tenant_option(index_option(func))
    return given


def read_session(func: Callable[..., int]) -> Callable[..., int]:
    """A read command's door from its `read_options`: `tenant` and `index_path` become one
    `door: Session`, so the command does not carry what it only hands on. It goes below
    `handled`, so a binding refused or a folder outside a repository is reported as any error."""

    @functools.wraps(func)
    def with_session(*args: Any, tenant: str | None = None, index_path: str | None = None, **kwargs: Any) -> int:
        return func(*args, door=session(index_path, tenant), **kwargs)

    return with_session


def _progress_bar(label: str, keep: bool = False) -> Callable[[int, int], None] | None:
    """A progress bar on stderr when stderr is a terminal (None otherwise: pipes, CI and logs
    stay clean). When done it stays on its own line with `keep`, else it is wiped."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        line = f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {100 * done // max(total, 1):3d}%"
        sys.stderr.write(line)
        if done >= total:
            sys.stderr.write("\n" if keep else "\r" + " " * (len(line) - 1) + "\r")
        sys.stderr.flush()

    return show


def _json_out(answer: Answer, output_format: str) -> int:
    result = answer.to_json()
    if output_format == "json":
        _emit_json(result)
    else:
        from .render import render_generic

        click.echo(render_generic(result))
    return errors.EXIT_OK


json_or_text = output_format("text: readable lines; json: the full result object.", ("json", "text"), default="text")


at_option = click.option("--at", metavar="REV", help="The repository as it was at REV.")


paging = [click.option("--limit", type=int, default=50, show_default=True, help="At most this many (1..1000)."),
          click.option("--offset", type=int, default=0, help="Skip this many first (for the next page).")]


def _paged(func: Callable) -> Callable:
    for option in reversed(paging):
        func = option(func)
    return func


def json_default(text_help: str) -> Callable[[Any], Any]:
    """`--format` of a command whose answer is JSON by default."""
    return output_format(f"json: {text_help}", ("json", "text"))
