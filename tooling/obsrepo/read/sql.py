"""`obsrepo sql`: one read-only statement against the index, rendered as a table, CSV or JSON.

The connection is read-only and sandboxed (no file access, configuration locked), so neither
a write nor `COPY … TO`, `ATTACH` or `read_csv('/etc/passwd')` gets through; a statement is
planned before it runs, and one whose plan calls a table function with a side effect
(`checkpoint()`) is refused. Each statement runs under a time limit (`con.interrupt()` from a
timer) and the connection's memory limit.
"""

from __future__ import annotations

import csv
import io
import json
import re
import threading
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from ..errors import QUERY_MEMORY_LIMIT, QUERY_TIMEOUT, QueryLimit, UsageError
from ..format.report import plural

DEFAULT_TIMEOUT = 30.0
DEFAULT_MEMORY_LIMIT = "1GB"
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)", re.IGNORECASE)

# Table functions that change something (a checkpoint, logging or profiling state) or run SQL
# text that escapes this check; refused wherever they appear in a statement's plan.
SIDE_EFFECTS = frozenset({
    "CHECKPOINT", "FORCE_CHECKPOINT", "ENABLE_LOGGING", "DISABLE_LOGGING", "TRUNCATE_DUCKDB_LOGS",
    "ENABLE_PROFILING", "DISABLE_PROFILING", "QUERY", "QUERY_TABLE", "JSON_EXECUTE_SERIALIZED_SQL",
})


def check_limits(timeout: float, memory_limit: str) -> str:
    """VALIDATION_ERROR for a timeout that is not a positive number of seconds or a memory limit
    DuckDB would not read as an amount; returns the memory limit normalised (`512 mb` → `512MB`)."""
    if not (isinstance(timeout, (int, float)) and 0 < timeout <= 86400):
        raise UsageError("timeout must be a number of seconds above 0 (at most 86400)", parameter="timeout")
    match = _MEMORY.fullmatch(memory_limit.strip())
    if not match or float(match.group(1)) <= 0:
        raise UsageError(f"memory_limit must be an amount such as 512MB or 2GB, got '{memory_limit}'",
                         parameter="memory_limit")
    return f"{match.group(1)}{match.group(2).upper()}"


def run_sql(con: Any, statement: str, timeout: float = DEFAULT_TIMEOUT,
            memory_limit: str = DEFAULT_MEMORY_LIMIT) -> tuple[list[str], list[tuple]]:
    """Run one query on `con`, interrupted after `timeout` seconds (QUERY_TIMEOUT); a statement
    that needs more than the connection's memory limit is QUERY_MEMORY_LIMIT."""
    import duckdb

    if not statement.strip():
        raise UsageError("an empty statement", parameter="STATEMENT")
    timer = threading.Timer(timeout, con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        _only_a_query(con, statement)
        result = con.execute(statement)
        if result.description is None:
            return [], []
        table = result.to_arrow_table() if hasattr(result, "to_arrow_table") else result.fetch_arrow_table()
    except duckdb.InterruptException:
        raise QueryLimit(f"the statement was stopped after {timeout:g} seconds (--timeout)",
                         code=QUERY_TIMEOUT, seconds=timeout) from None
    except duckdb.OutOfMemoryException:
        raise QueryLimit(f"the statement needs more memory than {memory_limit} (--memory-limit)",
                         code=QUERY_MEMORY_LIMIT, memory_limit=memory_limit) from None
    except (duckdb.IOException, duckdb.InternalException, duckdb.SerializationException, duckdb.FatalException):
        raise  # a damaged index, not a bad statement: the caller rebuilds it
    except duckdb.Error as exc:
        raise _refused(exc) from None
    finally:
        timer.cancel()
    columns = table.column_names
    rows = [tuple(row[c] for c in columns) for row in table.to_pylist()] if columns else []
    return list(columns), rows


def _refused(exc: Exception) -> UsageError:
    """DuckDB's message with its hints ("Did you mean …?") but without the caret picture."""
    lines = str(exc).splitlines()
    message = lines[0] if lines else str(exc)
    for line in lines[1:]:
        if line.startswith("LINE "):
            break
        if line.strip():
            message += " " + line.strip()
    if "read-only" in message or "read only" in message:
        message = f"the index is read-only: only queries are allowed ({message})"
    elif "file system operations are disabled" in message or "Permission Error" in message:
        message = f"file access is disabled in `sql` ({message})"
    return UsageError(message, parameter="STATEMENT")


QUERY_TYPES = ("SELECT", "EXPLAIN", "CALL")  # DESCRIBE, SHOW, SUMMARIZE, PRAGMA show_… parse as SELECT


def _only_a_query(con: Any, statement: str) -> None:
    """Exactly one statement, and a query: even a temporary table is refused, so that `sql`
    means the same thing on every connection. `EXPLAIN [ANALYZE]` is judged by the statement it
    explains (ANALYZE runs it); a table function with a side effect is refused wherever the
    plan calls it."""
    import duckdb

    inner = _one_statement(con, statement)
    if _a_query(inner) == "EXPLAIN":
        inner = _one_statement(con, _explained(inner.query))
        if _a_query(inner) == "EXPLAIN":
            raise UsageError("EXPLAIN explains one query, not another EXPLAIN", parameter="STATEMENT")

    try:
        plan = con.execute("EXPLAIN (FORMAT json) " + inner.query).fetchall()
    except duckdb.InterruptException:
        raise
    except duckdb.Error as exc:
        raise _refused(exc) from None
    for _kind, text in plan:
        called = _functions(json.loads(text))
        refused = sorted(called & SIDE_EFFECTS)
        if refused:
            raise UsageError(f"{refused[0].lower()}() is not a query: `sql` only reads the index",
                             parameter="STATEMENT")


def _one_statement(con: Any, text: str) -> Any:
    import duckdb

    try:
        statements = con.extract_statements(text)
    except duckdb.Error as exc:
        raise _refused(exc) from None
    for parsed in statements:  # a write anywhere is named as such, before the count
        _a_query(parsed)
    if len(statements) != 1:
        raise UsageError(f"one statement at a time (got {len(statements)})", parameter="STATEMENT")
    return statements[0]


def _a_query(parsed: Any) -> str:
    kind = str(parsed.type).rsplit(".", 1)[-1]
    if kind not in QUERY_TYPES:
        raise UsageError(f"the index is read-only: only queries are allowed (this is a {kind} statement)",
                         parameter="STATEMENT")
    return kind


_SKIP = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
_WORD = re.compile(r"[A-Za-z_]+")


def _skip(text: str, at: int) -> int:
    """Past white space and comments from `at` (the pattern matches the empty string too)."""
    match = _SKIP.match(text, at)
    return match.end() if match else at


def _explained(text: str) -> str:
    """The statement an `EXPLAIN [ANALYZE] [(options)]` explains (comments allowed between)."""
    at = _skip(text, 0)
    word = _WORD.match(text, at)
    if not word or word.group().upper() != "EXPLAIN":
        raise UsageError("EXPLAIN must come first in an EXPLAIN statement", parameter="STATEMENT")
    at = _skip(text, word.end())
    word = _WORD.match(text, at)
    if word and word.group().upper() in ("ANALYZE", "ANALYSE"):
        at = _skip(text, word.end())
    if text.startswith("(", at):
        close = text.find(")", at)
        if close < 0:
            raise UsageError("EXPLAIN options are not closed", parameter="STATEMENT")
        at = close + 1
    return text[at:]


def _functions(plan: Any) -> set[str]:
    """Every table function called anywhere in a JSON plan, upper case."""
    found: set[str] = set()
    if isinstance(plan, list):
        for item in plan:
            found |= _functions(item)
    elif isinstance(plan, dict):
        function = (plan.get("extra_info") or {}).get("Function") if isinstance(plan.get("extra_info"), dict) else None
        if isinstance(function, str):
            found.add(function.strip().upper())
        for child in plan.get("children") or ():
            found |= _functions(child)
    return found


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
            writer.writerow(["" if v is None else json.dumps(_plain(v), ensure_ascii=False) if isinstance(v, (list, dict))
                             else _plain(v) for v in row])
        return buffer.getvalue().rstrip("\n")
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(columns, widths)), "-+-".join("-" * w for w in widths)]
    lines += [" | ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    lines.append(f"({plural(len(rows), 'row')})")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (list, dict)):
        return json.dumps(_plain(value), ensure_ascii=False)
    text = str(_plain(value))
    return text.replace("\n", "\\n")
