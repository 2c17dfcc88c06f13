"""The watcher's overlay: uncommitted documents of the work tree that pass the check, in a
DuckDB file of their own (`<index>.overlay`) beside the index (docs/design.md §13).

The committed index is never touched by a draft: the overlay holds only new paths, is made
over one indexed commit (its `meta.commit`) and is published like an index generation
(private copy, seal, rename). Readers attach it read-only when a watcher is running and its
commit is the indexed one, and union its rows into `visible` (read/scope.py); its row ids
are negative, far below stored and `--at` overlay ones, so a record knows it is uncommitted.
"""

from __future__ import annotations

import os
from typing import Any

from .columns import OBS_VERSIONS, ddl
from .schema import NOW

DRAFT_ROWS = -(2**50)  # overlay row ids: DRAFT_ROWS, DRAFT_ROWS + 1, …
# drafts have no commit: those columns are NULL
_NULLABLE = {"commit", "author", "author_email", "committed_at"}
DRAFT_COLUMNS = [(name, kind, not_null and name not in _NULLABLE) for name, kind, not_null in OBS_VERSIONS]


def is_draft_row(row_id: int) -> bool:
    return row_id < DRAFT_ROWS // 2


def draft_rows(drafts: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """(path, blob, record) of valid drafts, in path order → overlay rows."""
    rows = []
    for number, (path, blob, record) in enumerate(sorted(drafts, key=lambda d: d[0])):
        rows.append(dict(record, row_id=DRAFT_ROWS + number, added_seq=0, removed_seq=NOW, path=path, blob=blob,
                         commit=None, author=None, author_email=None, committed_at=None))
    return rows


def write_overlay(index_file: str, commit: str, drafts: list[tuple[str, str, dict[str, Any]]]) -> None:
    """Publish the overlay of `drafts` over indexed `commit`; no drafts: no overlay file."""

    from .columns import OBS_COLUMNS
    from .documents import index_terms
    from .generations import publish
    from .paths import overlay_path
    from .rows import insert_rows
    from .writer import IndexFiles, open_writer

    target = overlay_path(index_file)
    if not drafts:
        remove_overlay(index_file)
        return
    work = f"{target}.tmp-{os.getpid()}"
    IndexFiles.discard(work)
    con = open_writer(work)
    try:
        con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)")
        con.execute(ddl("overlay_obs", DRAFT_COLUMNS))
        con.execute("CREATE TABLE overlay_terms (row_id BIGINT NOT NULL, term VARCHAR NOT NULL, tf INTEGER NOT NULL)")
        con.execute("CREATE TABLE overlay_doclen (row_id BIGINT NOT NULL, doc_len INTEGER NOT NULL)")
        con.execute("INSERT INTO meta VALUES ('commit', ?), ('documents', ?)", [commit, str(len(drafts))])
        insert_rows(con, "overlay_obs", OBS_COLUMNS, draft_rows(drafts))
        index_terms(con, "overlay_obs", "overlay_terms", DRAFT_ROWS)
        con.execute("CHECKPOINT")
    except BaseException:
        con.close()
        IndexFiles.discard(work)
        raise
    con.close()
    publish(work, target)


def remove_overlay(index_file: str) -> None:
    from .paths import overlay_path

    target = overlay_path(index_file)
    for leftover in (target, target + ".seal"):
        try:
            os.remove(leftover)
        except FileNotFoundError:
            pass
