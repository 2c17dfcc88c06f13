"""Places in the default order (timestamp, then id) of rows of `visible`, and their
timestamps, as numpy arrays.

A ranked page breaks ties by the default order, so the rows that may reach it need their
places in it. A command reads them for those rows alone (one join, scope.placed); a kept-open
reader (memo) reads every visible row's place once per index generation and view, ordered
as that join orders them, and looks rows up in it (a text query is then no statement).
"""

from __future__ import annotations

from typing import Any

from .rowids import ByRow
from .scope import ReadScope


def places(scope: ReadScope, row_ids: Any, order: str) -> Any:
    """Each of `row_ids`' place in the default order among them (0 first), `order` being the
    ORDER BY of that order ("timestamp DESC, id DESC" or ASC)."""
    import numpy as np

    if not len(row_ids):
        return np.empty(0, dtype=np.int64)
    if scope.memo is None:
        return _joined(scope, row_ids, order)
    everywhere = scope.remember(("default order", *scope.view_key()), lambda: _every_place(scope))
    key = everywhere.of(np.ascontiguousarray(row_ids, dtype=np.int64))
    if order.endswith("DESC"):
        key = -key
    rank = np.empty(len(row_ids), dtype=np.int64)
    rank[np.argsort(key, kind="stable")] = np.arange(len(row_ids))
    return rank


def _every_place(scope: ReadScope) -> Any:
    """Every visible row's place in ascending (timestamp, id, row id) order, by row id."""
    import numpy as np

    found = scope.columns("SELECT row_id FROM visible ORDER BY timestamp, id, row_id")
    ids = np.asarray(found["row_id"], dtype=np.int64)
    return ByRow(ids, np.arange(len(ids), dtype=np.int64), -1)


def _joined(scope: ReadScope, row_ids: Any, order: str) -> Any:
    """The places by one join over `row_ids` (sorted) only."""
    import numpy as np

    with scope.registered("candidate_rows", {"row_id": np.ascontiguousarray(row_ids, dtype=np.int64)}):
        found = scope.columns(f"SELECT c.row_id FROM candidate_rows AS c JOIN {scope.placed(row_ids)} AS v USING (row_id) "
                              f"ORDER BY {order}")
    rank = np.empty(len(row_ids), dtype=np.int64)
    rank[np.searchsorted(row_ids, found["row_id"])] = np.arange(len(row_ids))
    return rank


def timestamps(scope: ReadScope, row_ids: Any) -> Any:
    """Each of `row_ids`' (sorted rows of `visible`) timestamp in microseconds since 1970 (UTC)."""
    import numpy as np

    def by_row(found: dict[str, Any]) -> ByRow:
        return ByRow(np.asarray(found["row_id"], dtype=np.int64), np.asarray(found["at"], dtype=np.int64), 0)

    return _of_rows(scope, row_ids, "timestamps", "epoch_us({}timestamp) AS at", ["timestamp"], by_row)


def entities(scope: ReadScope, row_ids: Any) -> tuple[Any, list[str]]:
    """Each of `row_ids`' (sorted rows of `visible`) entity as a code (-1: none), and the
    entities the codes name. A kept-open reader numbers every visible row's entity once per
    index generation and view, in DuckDB (a million strings are not made in Python)."""
    import numpy as np

    row_ids = np.ascontiguousarray(row_ids, dtype=np.int64)
    if scope.memo is not None:
        def every() -> tuple[ByRow, list[str]]:
            names = [name for (name,) in scope.rows("SELECT DISTINCT entity FROM visible WHERE entity IS NOT NULL "
                                                   "ORDER BY entity")]
            found = scope.columns("SELECT v.row_id, e.code FROM visible AS v JOIN (SELECT entity, "
                                  "(row_number() OVER (ORDER BY entity) - 1)::BIGINT AS code FROM (SELECT DISTINCT entity "
                                  "FROM visible WHERE entity IS NOT NULL)) AS e USING (entity)")
            return ByRow(np.asarray(found["row_id"], dtype=np.int64), np.asarray(found["code"], dtype=np.int64), -1), names

        kept, names = scope.remember(("entities", *scope.view_key()), every)
        return kept.of(row_ids), names

    def by_row(found: dict[str, Any]) -> tuple[ByRow, list[str]]:
        entity = found["entity"]
        present = ~np.ma.getmaskarray(entity)
        names, codes = np.unique(np.ma.getdata(entity)[present].astype(str), return_inverse=True)
        rows = np.asarray(found["row_id"], dtype=np.int64)[present]
        return ByRow(rows, codes.astype(np.int64).reshape(-1), -1), names.tolist()

    return _of_rows(scope, row_ids, "entities", "{}entity", ["entity"], by_row)


def _of_rows(scope: ReadScope, row_ids: Any, kind: str, column: str, names: list[str], by_row: Any) -> Any:
    """`by_row` of (row_id, the column) of `row_ids` ((a ByRow, …): its `of(row_ids)`, …): a
    kept-open reader reads every visible row's once per index generation and view, a command
    those of `row_ids` only."""
    import numpy as np

    row_ids = np.ascontiguousarray(row_ids, dtype=np.int64)
    if scope.memo is None:
        relation = (scope.records_of(row_ids.tolist(), names) if scope.records_by_key(row_ids) and row_ids[0] >= 0
                    else "visible")
        with scope.registered("hinted_rows", {"row_id": row_ids}):
            found = scope.columns(f"SELECT c.row_id, {column.format('v.')} FROM hinted_rows AS c "
                                  f"JOIN {relation} AS v USING (row_id)")
    else:
        found = None
    kept = by_row(found) if found is not None else scope.remember(
        (kind, *scope.view_key()), lambda: by_row(scope.columns(f"SELECT row_id, {column.format('')} FROM visible")))
    if isinstance(kept, tuple):
        return (kept[0].of(row_ids), *kept[1:])
    return kept.of(row_ids)
