"""Ranking by meaning (docs/design.md §15): `--match semantic|hybrid` over the filtered rows.

Everything is computed over the rows that passed every filter (tenant, ceiling, commit, scope,
type, source, dates, retraction, retention) and nothing else, so no other tenant's row shapes
a score. Cosine is exact (every filtered row with a vector, no approximate index): the same
commit, inputs and embedder give the same page. Candidates are the `k` nearest by cosine, and
in `hybrid` every BM25 hit too; relevance is `α·max(cos, 0) + (1−α)·bm25/max(bm25)` (`cc`) or
reciprocal rank fusion (`rrf`, k = 60), rounded to 6 decimals, times the feedback weight; ties
go by the default order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import missing_extra
from .bm25 import bm25_scored
from .scope import ReadScope

RRF_K = 60


@dataclass(frozen=True)
class Semantic:
    """How to rank: `match` semantic|hybrid, `alpha`, `fusion` cc|rrf, `k` nearest, the query's
    vector, and the vectors of the texts (text key → float32 vector, the repository's cache)."""

    match: str
    alpha: float
    fusion: str
    k: int
    vector: Any
    vectors: dict[str, Any]


@dataclass(frozen=True)
class Ranked:
    row_id: int
    score: float
    lexical: float
    semantic: float
    weight: float


def ranked(scope: ReadScope, matching: str, params: list, text: str, how: Semantic, order: str,
           weights: Any) -> tuple[list[Ranked], dict[str, int]]:
    """Every candidate, best first, and the coverage {candidates, with_vectors} of the filtered
    rows. `weights(ids)` gives each observation id's feedback weight (1.0 when unweighted)."""
    rows = scope.rows(f"SELECT v.row_id, v.timestamp, v.id, t.text_key FROM ({matching}) AS v "
                      f"LEFT JOIN obs_texts AS t USING (row_id) ORDER BY {order}", params)
    position = {row_id: i for i, (row_id, _ts, _id, _key) in enumerate(rows)}  # the default order
    ids = {row_id: obs_id for row_id, _ts, obs_id, _key in rows}
    cosines = _cosines(how.vector, [(row_id, how.vectors[key]) for row_id, _ts, _id, key in rows if key in how.vectors])
    nearest = sorted(cosines, key=lambda row_id: (-cosines[row_id], position[row_id]))[:how.k]
    bm25: dict[int, float] = {}
    if how.match == "hybrid":
        bm25 = dict(scope.rows(f"{bm25_scored(matching)} SELECT row_id, score FROM scored", params + [text]))
    candidates = sorted(set(nearest) | set(bm25), key=position.__getitem__)
    top = max(bm25.values(), default=0.0)
    # rounded first, as the records show them: a caller recomputes the score from its record
    lexical = {row_id: round(bm25.get(row_id, 0.0) / top if top > 0 else 0.0, 6) for row_id in candidates}
    semantic = {row_id: round(max(cosines.get(row_id, 0.0), 0.0), 6) for row_id in candidates}
    weight_of = weights([ids[row_id] for row_id in candidates])
    if how.fusion == "rrf":
        fused = _rrf([nearest, sorted(bm25, key=lambda r: (-bm25[r], position[r]))], candidates)
    else:
        fused = {r: round(how.alpha * semantic[r] + (1 - how.alpha) * lexical[r], 6) for r in candidates}
    answer = [Ranked(r, round(fused[r] * weight_of.get(ids[r], 1.0), 6), lexical[r], semantic[r], weight_of.get(ids[r], 1.0))
              for r in candidates]
    answer.sort(key=lambda item: -item.score)  # stable: ties keep the default order
    return answer, {"candidates": len(rows), "with_vectors": len(cosines)}


def _rrf(rankings: list[list[int]], candidates: list[int]) -> dict[int, float]:
    fused = dict.fromkeys(candidates, 0.0)
    for ranking in rankings:
        for rank, row_id in enumerate(ranking, 1):
            fused[row_id] += 1.0 / (RRF_K + rank)
    return {row_id: round(value, 6) for row_id, value in fused.items()}


def _cosines(query: Any, rows: list[tuple[int, Any]]) -> dict[int, float]:
    """Exact cosine of the query with each row's vector; 0 for a zero vector (a text without a
    known token), never NaN."""
    try:
        import numpy as np
    except ModuleNotFoundError as exc:
        raise (missing_extra(exc) or exc) from None
    if not rows:
        return {}
    q = np.frombuffer(memoryview(query), dtype=np.float32).astype(np.float64)
    matrix = np.frombuffer(b"".join(vector.tobytes() for _row, vector in rows), dtype=np.float32)
    matrix = matrix.reshape(len(rows), len(q)).astype(np.float64)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(q)
    dots = matrix @ q
    values = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return {row_id: float(value) for (row_id, _vector), value in zip(rows, values)}
