"""The `obsrepo` program: the command group and the process around it."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NoReturn

import click

from ..ops.surface import RELEASE, own_process, settle
from .errors import _Group
from .options import examples

# command → the module of cli/ that defines it. A command's module loads when the command runs
# (or the help lists it), so `obsrepo check` in a pre-commit hook never loads the reads, the
# writes or publication (tests/test_cli.py holds this table equal to what the modules define).
COMMANDS = {
    "check": "gate", "new": "new", "init": "init",
    "query": "reads", "show": "reads", "sql": "reads", "status": "reads",
    "snapshot": "entities", "provenance": "entities", "entities": "entities", "find": "entities",
    "observations": "entities", "relations": "entities", "related": "entities", "timeline": "entities",
    "history": "entities", "diff": "review", "index": "live", "watch": "live", "mcp": "live",
    "correct": "write", "retract": "write", "relate": "write", "merge": "write",
    "feedback": "steward", "reclassify": "steward", "retention": "steward", "export": "steward",
    "comprehend": "steward", "comprehensions": "steward", "embed": "embed", "publish": "publish", "serve": "serve",
    "recall": "recall", "identities": "identity", "distinct": "identity", "intervals": "time", "contested": "time",
}


class _Lazy(_Group):
    """The command group that loads a command's module on first use."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"{__package__}.{COMMANDS[cmd_name]}")
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))


def load_all() -> click.Group:
    """The group with every command loaded (for the library and the tests)."""
    for module in sorted(set(COMMANDS.values())):
        importlib.import_module(f"{__package__}.{module}")
    return main


@click.group(cls=_Lazy, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
             epilog=examples("obsrepo new --source agent/crm --event \"Acme signed\" --entity company/acme",
                             "obsrepo check", "obsrepo query --scope task/42 --format full",
                             "obsrepo snapshot company/acme", "obsrepo COMMAND --help"))
@click.version_option(RELEASE, prog_name="obsrepo", help="Show the version and exit.")
def main() -> None:
    """A git repository as a database of observations.

    Observations are immutable Markdown files with YAML front matter under observations/;
    `new` writes one, `check` validates the repository (in CI and pre-commit), and the other
    commands read an index built from git (.obsrepo/index.duckdb, rebuilt when needed).

    Exit codes: 0 ok, 1 problems in the input, 2 a bad option, 3 not found,
    4 git, the index or a query limit, 5 a bug in obsrepo.
    """



def run() -> NoReturn:
    """The `obsrepo` program (the console script and `python -m obsrepo`): the CLI, then an
    immediate exit. A finished command has closed every file it wrote and joined every worker
    (each is opened in a `with`, or closed before an index is published), so what Python's own
    teardown would still do, freeing DuckDB, pydantic and pyarrow module by module, only costs
    time: about 45 ms a command. Standard output and error are flushed first; when the reader
    has closed the pipe (`obsrepo query | head`), the command ends quietly with its own code."""
    own_process()
    try:
        main(prog_name="obsrepo")
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if code is None:
        code = 0
    elif not isinstance(code, int):  # as Python itself reports `sys.exit("message")`
        print(code, file=sys.stderr)
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ValueError):  # the reader left, or the stream was closed
            pass
    settle()  # an old index generation is removed once the answer is out
    os._exit(code)
