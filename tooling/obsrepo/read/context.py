"""Context from neighbours: the lexical score of a row with its thread's neighbours folded in
(docs/recall.md, "How text ranks").

An observation is often half of an exchange: the answer names what the question asked about
only through the turn before it ("Where did you go?" — "To the support group."). So a row's
lexical score is its own BM25 plus `PREVIOUS` times that of the row just before it in its
thread, and `NEXT` times that of the row just after: `round6(bm25(r) + PREVIOUS·bm25(prev(r)) +
NEXT·bm25(next(r)))`. A row's thread is the rows with exactly its scopes (none: no thread), in
timestamp order (ties by id); the neighbours are found among the rows that passed every filter
— tenant, ceiling, scope, type, dates, retraction — so another tenant's row, or any row the
caller cannot see, is never a neighbour and never moves a score. The neighbours do not
depend on the text: a kept-open reader keeps them with the filtered rows.
"""

from __future__ import annotations

from typing import Any

from .bm25 import Filtered, Scored, bm25
from .scope import ReadScope

PREVIOUS = 0.4  # the weight of the previous row's BM25
NEXT = 0.2  # the weight of the next row's BM25


def lexical(scope: ReadScope, filtering: Filtered, matching: str, params: list, text: str) -> Scored:
    """BM25 of the filtered rows with their neighbours' folded in: every row that holds a term of
    `text`, or whose neighbour does, with its score (rounded to 6 decimals), by ascending row id
    (the hints, hints.py, apply to the rows that may reach a page)."""
    import numpy as np

    from .bm25 import _round6 as round6

    scored = bm25(scope, filtering, text)
    weights = [(PREVIOUS, 0), (NEXT, 1)]
    if not len(scored.row_ids) or not any(w for w, _ in weights):
        return scored
    filtered = filtering.rows
    around = neighbours(scope, filtering, matching, params)  # [previous, next] positions in `filtered`, -1: none
    at = np.searchsorted(filtered, scored.row_ids)  # the hits' positions
    # over the filtered rows' positions, dense: a mask and a value per position cost a pass of
    # simple steps where sorting or hashing a few hundred thousand hits costs ten times more
    own = np.zeros(len(filtered))  # each position's BM25, 0 for a row that is not a hit
    own[at] = scored.scores
    reached = np.zeros(len(filtered), dtype=bool)
    reached[at] = True
    for weight, side in weights:
        if weight:  # the rows whose neighbour on the other side is a hit
            other = around[1 - side][at]
            reached[other[other >= 0]] = True
    rows = np.flatnonzero(reached)
    total = own[rows]
    for weight, side in weights:
        if weight:
            near = around[side][rows]
            total = total + weight * np.where(near >= 0, own[np.maximum(near, 0)], 0.0)
    total = round6(total)
    keep = total > 0
    return Scored(filtered[rows[keep]].astype(np.int64), total[keep])


def neighbours(scope: ReadScope, filtering: Filtered, matching: str, params: list) -> Any:
    """For each filtered row (aligned with `filtering.rows`), the position of the row before it
    and the row after it in its thread, -1 where there is none; kept with the filtered rows."""
    if filtering.neighbours is None:
        import numpy as np

        found = scope.columns(
            f"SELECT m.row_id, lag(m.row_id) OVER w AS previous, lead(m.row_id) OVER w AS next "
            f"FROM ({matching}) AS m JOIN visible AS v USING (row_id) WHERE len(v.scope) > 0 "
            "WINDOW w AS (PARTITION BY list_sort(v.scope) ORDER BY m.timestamp, m.id)", params)
        rows = filtering.rows
        around = np.full((2, len(rows)), -1, dtype=np.int64)
        if len(found["row_id"]):
            at = np.searchsorted(rows, found["row_id"])
            for side, name in enumerate(("previous", "next")):
                column = found[name]
                present = ~np.ma.getmaskarray(column)
                values = np.ma.getdata(column)[present].astype(np.int64)
                around[side, at[present]] = np.searchsorted(rows, values)
        around.flags.writeable = False
        filtering.neighbours = around
    return filtering.neighbours
