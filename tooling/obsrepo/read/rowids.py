"""Sets of row ids as numpy arrays: what the text rankings (bm25.py, semantic.py, query.py)
join in numpy instead of in SQL.

Row ids are dense (0 up to the number of versions ever indexed; a watcher's drafts far below
zero), so a set of them is a mask over that range and a value per row an array indexed by it:
one pass over the ids, where a search in a sorted array costs a binary search per id (~5 ms for
100,000 ids in 100,000) and a sort more. Ids outside the range (drafts) take the sorted path.
"""

from __future__ import annotations

from typing import Any

DENSE = 4  # a mask or an array over the range when it is at most this many times the ids (plus a little)


def _dense(top: int, count: int) -> bool:
    return top < DENSE * count + 4096


def ascending(ids: Any) -> Any:
    """`ids` (distinct row ids) sorted, as `np.sort` gives them."""
    import numpy as np

    if len(ids) and int(ids.min()) >= 0 and _dense(int(ids.max()), len(ids)):
        mask = np.zeros(int(ids.max()) + 1, dtype=bool)
        mask[ids] = True
        found = np.flatnonzero(mask)
        if len(found) == len(ids):  # distinct, as rows are: else the sort keeps every one
            return found.astype(ids.dtype, copy=False)
    return np.sort(ids)


def among(sorted_ids: Any, ids: Any) -> Any:
    """Which of `ids` are in `sorted_ids` (a mask)."""
    import numpy as np

    if not len(sorted_ids) or not len(ids):
        return np.zeros(len(ids), dtype=bool)
    low, top = int(sorted_ids[0]), int(sorted_ids[-1])
    if low >= 0 and _dense(top, len(sorted_ids) + len(ids)):
        mask = np.zeros(top + 1, dtype=bool)
        mask[sorted_ids] = True
        inside = (ids >= 0) & (ids <= top)
        found = np.zeros(len(ids), dtype=bool)
        found[inside] = mask[ids[inside]]
        return found
    at = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
    return sorted_ids[at] == ids


class ByRow:
    """A value for each of some row ids (`default` for any other id), looked up by row id; an
    id listed twice has its first value."""

    def __init__(self, row_ids: Any, values: Any, default: Any) -> None:
        import numpy as np

        order = np.argsort(row_ids, kind="stable")
        self.ids, self.values, self.default = row_ids[order], values[order], default
        top = int(self.ids[-1]) if len(self.ids) else -1
        self.dense: Any = None
        if (len(self.ids) and int(self.ids[0]) >= 0 and _dense(top, len(self.ids))
                and not (self.ids[1:] == self.ids[:-1]).any()):
            self.dense = np.full(top + 1, default, dtype=values.dtype)
            self.dense[self.ids] = self.values

    def of(self, row_ids: Any) -> Any:
        """The values of `row_ids`, aligned with them."""
        import numpy as np

        out = np.full(len(row_ids), self.default, dtype=self.values.dtype)
        if self.dense is not None:
            inside = (row_ids >= 0) & (row_ids < len(self.dense))
            out[inside] = self.dense[row_ids[inside]]
            return out
        present = among(self.ids, row_ids)
        out[present] = self.values[np.searchsorted(self.ids, row_ids[present])]
        return out
