"""Commands that ask the index about observations: query, show, sql, status; each declared by
its request (declare.py) and a renderer."""

from __future__ import annotations

from typing import Any

from ..ops import Answer, Query, Show, Sql, Status
from ..ops.surface import QUERY_MODES, observation_lines, plural, table, vectors_line
from .declare import command, inverse
from .errors import _emit_json
from .options import embedder_option, index_option, json_or_text, output_format, read_options

query_format = output_format(choices=QUERY_MODES, default="short",
                             help_text="short: one line each; full: source, body, data and scopes too; json: one page object; "
                                       "jsonl: one record per line.")


@command(Query, names={"scopes": "--scope", "embedding": None,
                       "overlay": inverse("--committed-only", "Leave out a running watcher's uncommitted drafts.")},
         options=(embedder_option, query_format, read_options),
         examples=("obsrepo query --scope task/42", "obsrepo query --type task.updated --after 2026-02-01 --format full",
                   'obsrepo query --text "payment overdue" --tenant org=northwind --format json',
                   "obsrepo query --source agent: --at v1.2 --order asc --limit 100"))
def query(page: Answer, output_format: str) -> str:
    """Observations that match every filter given, newest first.

    Builds or updates the index first when it is missing or behind HEAD.
    Prints "No observations found." (short and full) when nothing matches.
    """
    return observation_lines(page.to_json(), output_format)


@command(Status, options=(index_option, embedder_option,
                          output_format(help_text="text: one fact a line; json: the whole state on stdout.")),
         examples=("obsrepo status", "obsrepo status --format json"))
def status(answer: Answer, output_format: str) -> str | None:
    """Which commit the index holds, how far behind HEAD, the watcher and its drafts.

    Also when the index, and the watcher, last updated and how long that took, and how many
    texts have the configured embedder's vectors, and the identity weights' fingerprint.
    """
    state = answer.to_json()
    if output_format == "json":
        _emit_json(state)
        return None
    last = state["last_update"] or {}
    watcher = state["watcher"]
    lines = [
        f"index:            {state['index']}",
        f"indexed commit:   {state['indexed_commit'] or '(none)'}" + (f"  ({state['problem']})" if state["problem"] else ""),
        f"behind HEAD:      {'-' if state['behind'] is None else plural(state['behind'], 'commit')}",
        f"watcher:          {_watcher_line(watcher)}",
        f"overlay:          {_overlay_line(state['overlay_documents'], watcher)}",
        f"last update:      {last.get('updated_at', '-')}" + (f" ({last['duration_ms']} ms)" if "duration_ms" in last else ""),
    ]
    if state["semantic"] is not None:
        lines.append(f"semantic:         {vectors_line(state['semantic'])}")
    if state.get("identity") is not None:
        identity = state["identity"]
        queue = "" if identity["candidates"] is None else f", {plural(identity['candidates'], 'candidate')}"
        lines.append(f"identity:         weights {identity['fingerprint']} ({plural(identity['types'], 'type')}, "
                     f"{plural(identity['fields'], 'field')}){queue}")
    return "\n".join(lines)


def _overlay_line(documents: int, watcher: dict | None) -> str:
    """The drafts that passed, and those the watcher rejected (they are reported on its stderr)."""
    line = plural(documents, "uncommitted document")
    if watcher and watcher.get("rejected_drafts"):
        line += f"; {plural(watcher['rejected_drafts'], 'draft')} rejected (see the watcher's output)"
    return line


def _watcher_line(watcher: dict | None) -> str:
    """`pid N, its last update at T (D ms)`: the watcher's own last update, which may have
    changed only the overlay, or nothing (the index's last update is a line of its own)."""
    if not watcher:
        return "not running"
    line = f"pid {watcher['pid']}"
    if watcher.get("updated_at"):
        line += f", its last update at {watcher['updated_at']}"
        if watcher.get("duration_ms") is not None:
            line += f" ({watcher['duration_ms']} ms)"
    return line


@command(Sql, options=(output_format(choices=("table", "csv", "json"),
                                     help_text="table: aligned columns; csv: with a header row; json: an array of row objects."),
                       index_option),
         examples=('obsrepo sql "SELECT type, count(*) AS n FROM observations GROUP BY ALL ORDER BY n DESC"',
                   'obsrepo sql "DESCRIBE observations"', 'obsrepo sql "SHOW TABLES" --format json',
                   'obsrepo sql "SELECT * FROM entity_snapshots" --format csv --timeout 120 --memory-limit 4GB'))
def sql(rows: Any, output_format: str) -> str:
    """Run one read-only SQL query against the index.

    One query at a time (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN [ANALYZE] of a query,
    CALL of a table function without side effects); writes, settings and file access are refused.
    Reads every tenant's rows, so it is refused to a tenant-bound caller.
    """
    return table(rows.columns, rows.rows, output_format)


@command(Show, options=(json_or_text, read_options),
         examples=("obsrepo show obs-20260402-091000-c4651c5f",
                   "obsrepo show obs-20260402-091000-c4651c5f --at HEAD~3 --format json"))
def show(answer: Answer, output_format: str) -> str | None:
    """One observation as a reviewer reads it.

    Its front matter and body, the commit that added it, what it corrects or retracts, who
    retracts it, and the fields of its entity's snapshot it currently wins.
    """
    if output_format == "json":
        _emit_json(answer.to_json())
        return None
    from .diff_render import render_show

    return render_show(answer.to_json())
