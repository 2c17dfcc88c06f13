"""`obsrepo export` (docs/design.md §14): every observation a query would match, not one page,
as JSON Lines, CSV, Markdown or Parquet partitioned by year and month.

The rows are exactly `query`'s for the same filters: the same read scope (commit, tenant
binding, ceiling, retention) and the same filters, retracted observations left out; oldest
first (timestamp, then id). CSV starts with the columns of the observation store this follows
(`id, agent, project, timestamp, classification, content_hash, feedback_weight, content`),
then the rest.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from ..errors import UsageError, WriteFault
from ..files import staged
from ..index.columns import UTC_TEXT
from .query import QueryRequest, _filters
from .scope import ReadScope

FORMATS = ("jsonl", "csv", "markdown", "parquet")
FIRST = ["id", "agent", "project", "timestamp", "classification", "content_hash", "feedback_weight", "content"]
REST = ["source", "type", "event", "body", "scope", "entity", "fields", "priority", "specificity", "tenant_org",
        "tenant_user", "declared_classification", "source_ref", "interpretation", "data", "context", "trace_ref",
        "corrects", "retracts", "relations", "feedback_target", "feedback_outcome", "feedback_session",
        "reclassify_targets", "path", "commit", "author", "committed_at"]
_NESTED = {"scope", "corrects", "retracts", "relations", "reclassify_targets"}  # lists: JSON text in CSV


def _select(weights: str, text_columns: bool, partitions: bool) -> str:
    """The exported columns; `text_columns`: times and lists as text (CSV, JSON Lines, Markdown)."""
    def column(name: str) -> str:
        if name == "agent":
            return "o.tenant_agent AS agent"
        if name == "project":
            return "o.tenant_project AS project"
        if name == "feedback_weight":
            return "coalesce(w.weight, 1.0) AS feedback_weight"
        if name == "content":
            return "o.event || CASE WHEN o.body <> '' THEN chr(10) || chr(10) || o.body ELSE '' END AS content"
        if name in ("timestamp", "committed_at"):
            return (UTC_TEXT.format(f"o.{name}") if text_columns else f"o.{name}") + f" AS {name}"
        if name in _NESTED and text_columns:
            return f"to_json(o.{name})::VARCHAR AS {name}"
        if name in ("fields", "data", "context") and text_columns:
            return f"o.{name}::VARCHAR AS {name}"
        return f'o."{name}"'
    columns = [column(name) for name in FIRST + REST]
    if partitions:
        columns += ["year(o.timestamp) AS year", "month(o.timestamp) AS month"]
    return ", ".join(columns)


def export_rows_sql(scope: ReadScope, request: QueryRequest, *, text_columns: bool = True,
                    partitions: bool = False) -> tuple[str, list[Any]]:
    """The SQL (and parameters) of every row `query` would match, oldest first."""
    from ..index.stewardship import retracted_sql

    where, params = _filters(request)
    if request.text:  # the rows BM25 scores: those holding at least one term of the text
        from ..index.rows import TOKENS

        where += (" AND o.row_id IN (SELECT t.row_id FROM visible_terms AS t WHERE t.term IN (SELECT DISTINCT "
                  f"stem(x, 'porter') FROM (SELECT unnest({TOKENS.format('?')}) AS x) WHERE x <> ''))")
        params.append(request.text)
    if not request.include_retracted:
        where += f" AND o.row_id NOT IN ({retracted_sql('visible')})"
    sql = (f"SELECT {_select(scope.weights(), text_columns, partitions)} FROM visible AS o "
           f"LEFT JOIN {scope.weights()} AS w ON w.observation_id = o.id WHERE {where} ORDER BY o.timestamp, o.id")
    return sql, params


def _literal_path(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def export(scope: ReadScope, request: QueryRequest, fmt: str, output: str | None, *,
           out: Any = None, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Write the rows to `output` (a file; for parquet a folder), whole or not at all (a
    temporary file or folder beside it, renamed into place: docs/design.md §8a), or to the
    binary stream `out` when `output` is None (parquet needs a folder). Returns {"format",
    "output", "count"}."""
    if fmt not in FORMATS:
        raise UsageError(f"format is one of {', '.join(FORMATS)}", parameter="format")
    if fmt == "parquet":
        if output is None:
            raise UsageError("output: parquet is written to a folder; name one", parameter="output")
        if os.path.exists(output) and (not os.path.isdir(output) or os.listdir(output)):
            raise UsageError(f"output {output} exists and is not an empty folder", parameter="output")
    if fmt == "markdown":
        count = _markdown(scope, request, output, out, progress)
        return {"format": fmt, "output": output, "count": count}
    sql, params = export_rows_sql(scope, request, text_columns=fmt != "parquet", partitions=fmt == "parquet")
    # USE_TMP_FILE false: the target is already a temporary file of ours (DuckDB's own would be
    # left behind when the write fails)
    options = {"csv": "FORMAT csv, HEADER true, USE_TMP_FILE false", "jsonl": "FORMAT json, USE_TMP_FILE false",
               "parquet": "FORMAT parquet, PARTITION_BY (year, month), COMPRESSION zstd"}[fmt]
    if output is not None:
        with staged(output, folder=fmt == "parquet") as target:
            count = _copy_to(scope, sql, target, options, params, progress, output)
        return {"format": fmt, "output": output, "count": count}
    handle, temporary = tempfile.mkstemp(suffix=f".{fmt}")
    os.close(handle)
    try:
        count = _copy_to(scope, sql, temporary, options, params, progress, temporary)
        with open(temporary, "rb") as source:
            shutil.copyfileobj(source, out)
    finally:
        os.unlink(temporary)
    return {"format": fmt, "output": output, "count": count}


def _copy_to(scope: ReadScope, sql: str, target: str, options: str, params: list[Any],
             progress: Callable[[int, int], None] | None, shown: str) -> int:
    """COPY the rows to the file or folder `target`; DuckDB's failure to write it (a full disk,
    a size limit) is a WRITE_ERROR naming `shown`, not an index error."""
    import duckdb

    try:
        return _copy(scope, f"COPY ({sql}) TO {_literal_path(target)} ({options})", params, progress)
    except duckdb.IOException as exc:
        raise WriteFault(f"cannot write {shown}: {exc}", path=shown, reason=str(exc)) from None


def _copy(scope: ReadScope, statement: str, params: list[Any], progress: Callable[[int, int], None] | None) -> int:
    """Run one COPY; with `progress`, DuckDB's own progress of the statement is reported (in
    per mille) from a second thread while it runs."""
    if progress is None:
        return int(scope.one(statement, params)[0])
    scope.con.execute("SET enable_progress_bar = true; SET enable_progress_bar_print = false")
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.2):
            value = scope.con.query_progress()
            if value is not None and value >= 0:
                progress(min(int(value * 10), 999), 1000)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        count = int(scope.one(statement, params)[0])
    finally:
        done.set()
        watcher.join()
    progress(1000, 1000)
    return count


def _markdown(scope: ReadScope, request: QueryRequest, output: str | None, out: Any,
              progress: Callable[[int, int], None] | None) -> int:
    """A table of the main columns (for reading; the other formats carry every column)."""
    sql, params = export_rows_sql(scope, request)
    total = scope.one(f"SELECT count(*) FROM ({sql})", params)[0]
    columns = ["id", "timestamp", "agent", "project", "classification", "feedback_weight", "event"]
    cursor = scope.con.execute(f"SELECT {', '.join(columns)} FROM ({sql})", params)
    with contextlib.ExitStack() as stack:
        sink = out
        if output is not None:
            sink = stack.enter_context(open(stack.enter_context(staged(output)), "wb"))  # noqa: SIM115 - the stack closes it
        sink.write(("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n").encode())
        done = 0
        while True:
            batch = cursor.fetchmany(10000)
            if not batch:
                break
            lines = ["| " + " | ".join(_cell(v) for v in row) + " |\n" for row in batch]
            sink.write("".join(lines).encode("utf-8"))
            done += len(batch)
            if progress:
                progress(done, total)
    return total


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6f}"
    return str(value).replace("|", "\\|").replace("\n", " ")
