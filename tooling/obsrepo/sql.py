"""`obsrepo sql`: one read-only statement against the index, rendered as a table, CSV or JSON.

The connection is read-only and sandboxed (no file access, configuration locked), so neither
a write nor `COPY … TO`, `ATTACH` or `read_csv('/etc/passwd')` gets through.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from .errors import UsageError


def run_sql(con: Any, statement: str) -> tuple[list[str], list[tuple]]:
    import duckdb

    if not statement.strip():
        raise UsageError("an empty statement", parameter="STATEMENT")
    _one_query(con, statement)
    try:
        result = con.execute(statement)
        if result.description is None:
            return [], []
        table = result.to_arrow_table() if hasattr(result, "to_arrow_table") else result.fetch_arrow_table()
    except (duckdb.IOException, duckdb.InternalException, duckdb.SerializationException, duckdb.FatalException):
        raise  # a damaged index, not a bad statement: the caller rebuilds it
    except duckdb.Error as exc:
        message = str(exc).splitlines()[0]
        if "read-only" in message or "read only" in message:
            message = f"the index is read-only: only queries are allowed ({message})"
        elif "file system operations are disabled" in message or "Permission Error" in message:
            message = f"file access is disabled in `sql` ({message})"
        raise UsageError(message, parameter="STATEMENT") from None
    columns = table.column_names
    rows = [tuple(row[c] for c in columns) for row in table.to_pylist()] if columns else []
    return list(columns), rows


QUERY_TYPES = ("SELECT", "EXPLAIN", "CALL")  # DESCRIBE, SHOW, SUMMARIZE, PRAGMA show_… parse as SELECT


def _one_query(con: Any, statement: str) -> None:
    """Exactly one statement, and a query: even a temporary table is refused, so that `sql`
    means the same thing on every connection (the MCP server's included)."""
    import duckdb

    try:
        statements = con.extract_statements(statement)
    except duckdb.Error as exc:
        raise UsageError(str(exc).splitlines()[0], parameter="STATEMENT") from None
    for parsed in statements:
        kind = str(parsed.type).rsplit(".", 1)[-1]
        if kind not in QUERY_TYPES:
            raise UsageError(f"the index is read-only: only queries are allowed (this is a {kind} statement)",
                             parameter="STATEMENT")
    if len(statements) != 1:
        raise UsageError(f"one statement at a time (got {len(statements)})", parameter="STATEMENT")


def _plain(value: Any) -> Any:
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, str) and value[:1] in "{[":
        return value
    return value


def render(columns: list[str], rows: list[tuple], output_format: str) -> str:
    if output_format == "json":
        return json.dumps([{c: _plain(v) for c, v in zip(columns, row)} for row in rows], ensure_ascii=False)
    if output_format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(["" if v is None else json.dumps(_plain(v), ensure_ascii=False) if isinstance(v, (list, dict)) else _plain(v) for v in row])
        return buffer.getvalue().rstrip("\n")
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(columns, widths)), "-+-".join("-" * w for w in widths)]
    lines += [" | ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (list, dict)):
        return json.dumps(_plain(value), ensure_ascii=False)
    text = str(_plain(value))
    return text.replace("\n", "\\n")
