"""Places in the default order (timestamp, then id) of rows of `visible`, as numpy arrays.

A ranked page breaks ties by the default order, so the rows that may reach it need their
places in it. A command reads them for those rows alone (one join, scope.placed); a kept-open
reader (memo) reads every visible row's place once per index generation and view, ordered
as that join orders them, and looks rows up in it (a text query is then no statement).
"""

from __future__ import annotations

from typing import Any

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

    from .rowids import ByRow

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
