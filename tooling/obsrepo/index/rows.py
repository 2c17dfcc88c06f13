"""Rows into tables: the one way the writer (and a read overlay) inserts rows, by Arrow for
many and by plain parameters for a few; and the tokenizer shared by BM25 terms and queries."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timezone
from operator import itemgetter
from typing import Any

from ..format.rules import moment_from_cache
from .columns import OBS_COLUMNS, arrow_types, entity_key
from .schema import CLASSIFICATION_RANK

SMALL_BATCH = 64  # rows per statement inserted with plain parameters rather than through Arrow
PLAIN_LIMIT = 16 * SMALL_BATCH  # up to this many rows (a pull request's overlay), statements of SMALL_BATCH
TOKENS = r"regexp_split_to_array(lower(strip_accents({})), '[^\p{{L}}\p{{N}}]+')"  # text → tokens, for terms and queries


def _prepare(table: str, columns: list[str], rows: list[dict]) -> None:
    if table.endswith("obs_versions") or table == "overlay_obs":
        for row in rows:
            row["class_rank"] = CLASSIFICATION_RANK[row["classification"]]
            row["special"] = special(row)
            row["entity_key"] = entity_key(row["entity"])
    for name in ("timestamp", "committed_at", "created", "updated", "valid_from", "valid_until"):
        if name in columns:
            for row in rows:
                row[name] = utc(row[name])


def arrow_table(table: str, columns: list[str], rows: list[dict]) -> Any:
    import pyarrow as pa

    _prepare(table, columns, rows)
    types = arrow_types()
    return pa.table({name: pa.array([row[name] for row in rows], types.get(name, pa.string())) for name in columns})


def special(record: dict) -> bool:
    """Retracts something or merges (a DUPLICATE_OF relation): the reducer reads these first."""
    return bool(record["retracts"]) or any(r["type"] == "DUPLICATE_OF" for r in record["relations"])


def text_batch(versions: Sequence[tuple[Any, dict, int]]) -> Any:
    """The columns BM25 reads (row_id, event, body) of (file, record, row id) triples, as Arrow."""
    import pyarrow as pa

    return pa.table({"row_id": pa.array([row_id for _, _, row_id in versions], pa.int64()),
                     "event": pa.array([record["event"] for _, record, _ in versions], pa.string()),
                     "body": pa.array([record["body"] for _, record, _ in versions], pa.string())})


def observation_batch(versions: Sequence[tuple[Any, dict, int]], info: dict, text: Any = None) -> Any:
    """obs_versions rows as an Arrow table built straight from valid versions; the same table
    as `arrow_table` over `documents.version_row` dicts, without making them. `text`: their
    `text_batch`, made already."""
    import pyarrow as pa

    types = arrow_types()
    files = [file for file, _, _ in versions]
    records = [record for _, record, _ in versions]
    commits = {sha: (commit.author, commit.author_email, utc(commit.committed_at)) for sha, commit in info.items()}
    metas = [commits[file.commit] for file in files]
    columns: dict[str, Any] = {
        "row_id": [row_id for _, _, row_id in versions],
        "added_seq": [file.added_seq for file in files],
        "removed_seq": [file.removed_seq for file in files],
        "path": [file.path for file in files],
        "blob": [file.blob for file in files],
        "commit": [file.commit for file in files],
        "author": [meta[0] for meta in metas],
        "author_email": [meta[1] for meta in metas],
        "committed_at": [meta[2] for meta in metas],
        "class_rank": [CLASSIFICATION_RANK[record["classification"]] for record in records],
        "special": [special(record) for record in records],
        "entity_key": [entity_key(record["entity"]) for record in records],
        "timestamp": _timestamps([record["timestamp"] for record in records], types["timestamp"]),
        # a period is rare: most rows hold none (docs/design.md §19)
        **{name: pa.array([utc(record.get(name)) for record in records], types[name])
           for name in ("valid_from", "valid_until")},
    }
    if text is not None:
        columns.update(event=text.column("event"), body=text.column("body"))
    names = [name for name in OBS_COLUMNS if name not in columns]  # the rest, read from the records
    columns.update(zip(names, zip(*map(itemgetter(*names), records))))  # columns at once: C loops, no Python one per value
    return pa.table({name: columns[name] for name in OBS_COLUMNS}, schema=obs_schema())


def _timestamps(moments: list[Any], kind: Any) -> Any:
    """Aware datetimes (a parsed record) or 1-tuples of UTC microseconds (a record read raw from
    the cache) → the naive UTC a TIMESTAMP column holds."""
    import pyarrow as pa

    if all(moment.__class__ is tuple for moment in moments):
        return pa.array([moment[0] for moment in moments], pa.int64()).cast(kind)
    if any(moment.__class__ is tuple for moment in moments):
        moments = [utc(moment) for moment in moments]  # naive UTC, every one
        return pa.array(moments, kind)
    return pa.array(moments, pa.timestamp("us", "UTC")).cast(kind)  # as UTC instants, then naive


def obs_schema() -> Any:
    import pyarrow as pa

    types = arrow_types()
    return pa.schema([(name, types.get(name, pa.string())) for name in OBS_COLUMNS])


def insert_rows(con: Any, table: str, columns: list[str], rows: list[dict]) -> None:
    if not rows:
        return
    if table.endswith("obs_versions") or table == "overlay_obs":
        # stored by entity, so that one entity's rows sit together and most blocks are skipped
        rows = sorted(rows, key=lambda r: (r["entity"] or "\uffff", r["id"]))
    quoted = ", ".join(f'"{c}"' for c in columns)
    if len(rows) <= PLAIN_LIMIT:
        # a few rows (an update, an overlay): plain parameters spare loading pyarrow (~0.25 s)
        _prepare(table, columns, rows)
        holes = "(" + ", ".join("?" for _ in columns) + ")"
        for start in range(0, len(rows), SMALL_BATCH):
            batch = rows[start : start + SMALL_BATCH]
            con.execute(f"INSERT INTO {table} ({quoted}) VALUES " + ", ".join(holes for _ in batch),
                        [row[name] for row in batch for name in columns])
        return
    con.register("incoming", arrow_table(table, columns, rows))
    con.execute(f"INSERT INTO {table} ({quoted}) SELECT {quoted} FROM incoming")
    con.unregister("incoming")


def utc(moment: Any) -> Any:
    """Naive UTC, as DuckDB TIMESTAMP columns hold it (None stays None: an uncommitted draft).
    A record read raw from the analysis cache holds its moments as 1-tuples of UTC microseconds
    since the epoch (`Analysis.record_to_cache`)."""
    if moment is None:
        return moment
    if moment.__class__ is tuple:
        return moment_from_cache(moment)
    return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment


