"""The product's own words, as every adapter shows and reads them: the vocabulary (tenant keys,
classifications, query modes, outcomes), the texts of seed 002 and of `check` (so the CLI, the
MCP server and the web view print the same lines), and the readers of a new observation's
input (JSON and `KEY=VALUE` fields), and the release. Nothing here prints; heavy modules load
on first use.
"""

from __future__ import annotations

from typing import Any

from ..format.report import NOT_WRITTEN, Issue, Report, plural, printable, text_line
from ..format.vocabulary import (
    CLASSIFICATIONS,
    CONFIDENCES,
    DEFAULT_CLASSIFICATION,
    DOCUMENT_ROOTS,
    ENTITY_SCHEMAS_DIR,
    FEEDBACK_OUTCOMES,
    QUERY_MODES,
    is_document_name,
)
from ..params import TENANT_KEYS
from ..version import __version__ as RELEASE
from .values import Moment

__all__ = [
    "CLASSIFICATIONS", "CONFIDENCES", "DEFAULT_CLASSIFICATION", "DOCUMENT_ROOTS", "ENTITY_SCHEMAS_DIR",
    "FEEDBACK_OUTCOMES", "NOT_WRITTEN", "QUERY_MODES", "RELEASE", "TENANT_KEYS", "Issue", "Report", "is_document_name",
    "log_folder", "observation_lines", "option_timestamp", "parse_field", "plural", "printable", "read_json_input",
    "read_text", "settle", "stamp_ms", "table", "text_line", "vectors_line", "write_replacing",
]


def observation_lines(page: dict[str, Any], mode: str) -> str:
    """A query page in seed 002's text: `short`, `full`, `json` or `jsonl`."""
    from ..read.render import render_observations

    return render_observations(page, mode)


def vectors_line(semantic: dict[str, Any]) -> str:
    """Recall's coverage of an index (docs/design.md §15): distinct texts with vectors, those
    pending, and why the provider gave none when it failed."""
    line = f"{plural(semantic['embedded'], 'text')} with vectors, {semantic['pending']} pending"
    if semantic.get("fingerprint"):
        line += f" ({semantic['fingerprint']})"
    if "indexed_fingerprint" in semantic:
        line += f"; the index holds {semantic['indexed_fingerprint'] or 'no'} vectors: `obsrepo index` brings it to these"
    if semantic.get("error"):
        line += f"; the embedder failed, the next run tries again: {semantic['error']}"
    return line


def stamp_ms(iso: str) -> str:
    """An ISO timestamp with milliseconds, as the short mode prints it."""
    from ..read.render import stamp_ms as stamped

    return stamped(iso)


def table(columns: list[str], rows: list[tuple], output_format: str) -> str:
    """`sql`'s rows as an aligned table, CSV or JSON."""
    from ..read.sql import render

    return render(columns, rows, output_format)


def parse_field(text: str, field: str) -> tuple[str, Any]:
    """`KEY=VALUE`: VALUE as JSON when it parses (as the front matter can hold it), else text."""
    from ..write.new import parse_field as parsed

    return parsed(text, field)


def read_json_input(source: str, field: str) -> tuple[dict[str, Any], str]:
    """A new observation's front matter (and optional body) as a JSON object from a file or `-`."""
    from ..write.new import read_json_input as read

    return read(source, field)


def read_text(source: str, field: str) -> str:
    from ..write.new import read_text as read

    return read(source, field)


def option_timestamp(value: str, field: str) -> str:
    """A moment as a new observation's `timestamp` (UTC, `Z`)."""
    from ..times import format_timestamp

    return format_timestamp(Moment.parse(value, field).value)


def write_replacing(path: str, data: bytes) -> None:
    """A file written whole or not at all (docs/design.md §8a), replacing any file there."""
    from ..files import write_replacing as write

    write(path, data)


def log_folder(cwd: str) -> str | None:
    """The repository's `.obsrepo/logs` (its parent made private first), or None outside one."""
    import os

    from ..gitstore import Git
    from ..index.paths import private_folder

    git = Git.discover(cwd)
    if git is None:
        return None
    private_folder(os.path.join(git.root, ".obsrepo"))
    return os.path.join(git.root, ".obsrepo", "logs")


def own_process() -> None:
    """The program's own process (the CLI, and the servers it starts) never imports pandas:
    DuckDB's Python client imports it, when installed, at the first parameter it converts,
    though obsrepo never hands it a DataFrame (~0.4 s of CPU, most of a short command). A
    library caller's process is left as it is."""
    from ..processes import without_pandas

    without_pandas(installed_too=True)


def settle() -> None:
    """Before the process exits: wait for an old index generation being freed on a thread (only
    when this process published one: the module is then loaded)."""
    import sys

    generations = sys.modules.get("obsrepo.index.generations")
    if generations is not None:
        generations.wait_for_freeing()
