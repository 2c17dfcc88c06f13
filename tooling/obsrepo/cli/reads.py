"""Commands that ask the index about observations: query, show, sql, status."""

from __future__ import annotations

import click

from .. import errors
from ..ops import Query, Session, Show, Sql, Status, run
from ..ops.surface import CLASSIFICATIONS, QUERY_MODES, observation_lines, plural, table, vectors_line
from .app import main
from .errors import _emit_json, handled
from .options import FORMATS, at_option, embedder_option, examples, index_option, json_or_text, read_options, read_session, session


@main.command(epilog=examples("obsrepo query --scope task/42", "obsrepo query --type task.updated --after 2026-02-01 --format full",
                              'obsrepo query --text "payment overdue" --tenant org=northwind --format json',
                              "obsrepo query --source agent: --at v1.2 --order asc --limit 100"))
@click.option("--scope", "scopes", multiple=True, help="A scope id (repeatable; matches ANY).")
@click.option("--type", "type_", help="Exact event type.")
@click.option("--source", help="Source prefix, taken literally (agent: matches agent:x).")
@click.option("--after", help="From this time on (inclusive): ISO 8601 with a timezone, or a date.")
@click.option("--before", help="Before this time (exclusive).")
@click.option("--entity", help="Observations about this entity.")
@click.option("--org", help="Only observations whose tenant has this org.")
@click.option("--project", help="Only observations whose tenant has this project.")
@click.option("--agent", help="Only observations whose tenant has this agent.")
@click.option("--user", help="Only observations whose tenant has this user.")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS),
              help="Leave out anything classified above this level.")
@click.option("--text", help="Full-text search (BM25) over event and body; the best matches first.")
@click.option("--at", metavar="REV", help="The repository as it was at REV.")
@click.option("--include-retracted", is_flag=True, help="Also list observations that were retracted.")
@click.option("--committed-only", is_flag=True, help="Leave out a running watcher's uncommitted drafts.")
@click.option("--include-expired", is_flag=True, help="Also list observations that retention expired.")
@click.option("--unweighted", is_flag=True, help="--text ranks without feedback weights.")
@click.option("--match", type=click.Choice(["lexical", "semantic", "hybrid"]),
              help="How --text ranks: BM25 (lexical), cosine of an embedder's vectors (semantic) or both (hybrid; "
                   "the default with an embedder configured, else lexical).")
@click.option("--alpha", type=float, default=0.5, show_default=True, help="hybrid: the cosine's share of the score (0..1).")
@click.option("--fusion", type=click.Choice(["cc", "rrf"]), default="cc", show_default=True,
              help="hybrid: a weighted sum of the scores (cc) or reciprocal rank fusion (rrf).")
@click.option("--semantic-k", type=int, default=100, show_default=True, metavar="K",
              help="semantic and hybrid: the K nearest by cosine are candidates.")
@embedder_option
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many (1..1000).")
@click.option("--offset", type=int, default=0, show_default=True, help="Skip this many first (for the next page).")
@click.option("--order", type=click.Choice(["desc", "asc"]), default="desc", show_default=True,
              help="By timestamp then id: newest first (desc) or oldest first (asc).")
@click.option("--format", "output_format", type=click.Choice(QUERY_MODES), default="short", show_default=True,
              help="short: one line each; full: source, body, data and scopes too; json: one page object; "
                   "jsonl: one record per line.")
@read_options
@handled
def query(scopes: tuple[str, ...], type_: str | None, source: str | None, after: str | None, before: str | None,
          entity: str | None, org: str | None, project: str | None, agent: str | None, user: str | None,
          max_classification: str | None, text: str | None, at: str | None, include_retracted: bool,
          committed_only: bool, include_expired: bool, unweighted: bool, match: str | None, alpha: float, fusion: str,
          semantic_k: int, embedder: str | None, limit: int, offset: int, order: str, output_format: str,
          tenant: str | None, index_path: str | None) -> int:
    """Observations that match every filter given, newest first.

    Builds or updates the index first when it is missing or behind HEAD.
    Prints "No observations found." (short and full) when nothing matches.
    """
    request = Query(scopes=scopes, type=type_, source=source, after=after, before=before, entity=entity, text=text,
                    max_classification=max_classification, include_retracted=include_retracted,
                    include_expired=include_expired, unweighted=unweighted, limit=limit, offset=offset, order=order,
                    at=at, org=org, project=project, agent=agent, user=user, overlay=not committed_only,
                    match=match, alpha=alpha, fusion=fusion, semantic_k=semantic_k)
    click.echo(observation_lines(run(session(index_path, tenant, embedder=embedder), request).to_json(), output_format))
    return errors.EXIT_OK


@main.command(epilog=examples("obsrepo status", "obsrepo status --format json"))
@index_option
@embedder_option
@click.option("--format", "output_format", type=FORMATS, default="text", show_default=True,
              help="text: one fact a line; json: the whole state on stdout.")
@handled
def status(index_path: str | None, embedder: str | None, output_format: str) -> int:
    """Which commit the index holds, how far behind HEAD, the watcher and its drafts.

    Also when the index, and the watcher, last updated and how long that took, and how many
    texts have the configured embedder's vectors.
    """
    state = run(session(index_path, embedder=embedder), Status()).to_json()
    if output_format == "json":
        _emit_json(state)
        return errors.EXIT_OK
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
    click.echo("\n".join(lines))
    return errors.EXIT_OK


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


@main.command(epilog=examples('obsrepo sql "SELECT type, count(*) AS n FROM observations GROUP BY ALL ORDER BY n DESC"',
                              'obsrepo sql "DESCRIBE observations"', 'obsrepo sql "SHOW TABLES" --format json',
                              'obsrepo sql "SELECT * FROM entity_snapshots" --format csv --timeout 120 --memory-limit 4GB'))
@click.argument("statement")
@click.option("--format", "output_format", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="table: aligned columns; csv: with a header row; json: an array of row objects.")
@click.option("--timeout", type=float, default=30.0, show_default=True, metavar="SECONDS",
              help="Stop the statement after this long (QUERY_TIMEOUT, exit 4).")
@click.option("--memory-limit", default="1GB", show_default=True, metavar="AMOUNT",
              help="The most memory the statement may use, e.g. 512MB, 4GB (QUERY_MEMORY_LIMIT, exit 4).")
@index_option
@handled
def sql(statement: str, output_format: str, timeout: float, memory_limit: str, index_path: str | None) -> int:
    """Run one read-only SQL query against the index.

    One query at a time (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN [ANALYZE] of a query,
    CALL of a table function without side effects); writes, settings and file access are refused.
    Reads every tenant's rows, so it is refused to a tenant-bound caller.
    """
    rows = run(session(index_path), Sql(statement, timeout, memory_limit))
    click.echo(table(rows.columns, rows.rows, output_format))
    return errors.EXIT_OK


@main.command(epilog=examples("obsrepo show obs-20260402-091000-c4651c5f",
                              "obsrepo show obs-20260402-091000-c4651c5f --at HEAD~3 --format json"))
@click.argument("observation_id", metavar="ID")
@at_option
@json_or_text
@read_options
@handled
@read_session
def show(observation_id: str, at: str | None, output_format: str, door: Session) -> int:
    """One observation as a reviewer reads it.

    Its front matter and body, the commit that added it, what it corrects or retracts, who
    retracts it, and the fields of its entity's snapshot it currently wins.
    """
    result = run(door, Show(observation_id, at)).to_json()
    if output_format == "json":
        _emit_json(result)
    else:
        from .diff_render import render_show

        click.echo(render_show(result))
    return errors.EXIT_OK

