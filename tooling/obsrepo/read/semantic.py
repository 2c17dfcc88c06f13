"""Ranking by meaning (docs/design.md §15): `--match semantic|hybrid` over the filtered rows.

Everything is computed over the rows that passed every filter (tenant, ceiling, commit, scope,
type, source, dates, retraction, retention) and nothing else, so no other tenant's row shapes
a score. Cosine is exact (every filtered row with a vector, no approximate index): the same
commit, inputs and embedder give the same page. Candidates are the `k` nearest by cosine, and
in `hybrid` every BM25 hit too; relevance is `α·max(cos, 0) + (1−α)·bm25/max(bm25)` (`cc`) or
reciprocal rank fusion (`rrf`, k = 60), rounded to 6 decimals, times the feedback weight; ties
go by the default order.

Speed: the index maps each filtered row to its vector's segment and slot (`embedded_texts`),
so the rows' vectors are gathered from the mapped segments in one step per segment and
screened by one float32 matrix-vector product. The cosines that decide (every row within the
float32 error bound of the k-th, and every candidate) are then computed again in float64 from
the same rows, one at a time alike, so a score never depends on which other rows were there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import missing_extra
from .bm25 import among, bm25
from .scope import ReadScope

RRF_K = 60


@dataclass(frozen=True)
class Semantic:
    """How to rank: `match` semantic|hybrid, `alpha`, `fusion` cc|rrf, `k` nearest, the query's
    vector, and the repository's vector cache of the embedder (embed.cache.VectorCache)."""

    match: str
    alpha: float
    fusion: str
    k: int
    vector: Any
    cache: Any


@dataclass(frozen=True)
class Ranked:
    row_id: int
    score: float
    lexical: float
    semantic: float
    weight: float


@dataclass(frozen=True)
class RankedPage:
    """One page of candidates, best first; `total` candidates; `coverage` {candidates,
    with_vectors} counts the filtered rows and those with vectors."""

    items: list[Ranked]
    total: int
    coverage: dict[str, int]


def ranked(scope: ReadScope, matching: str, params: list, text: str, how: Semantic, order: str,
           weighted: bool, offset: int, limit: int) -> RankedPage:
    """The candidates ranked, the page at `offset`; `weighted`: times each observation's
    feedback weight (else 1.0). Only the candidates are put in the default order (SQL); every
    candidate's scores are arrays (hybrid's candidates are every BM25 hit, tens of thousands in a
    large repository), rounded as Python rounds, and only the page's records are made one by one."""
    try:
        import numpy as np
    except ModuleNotFoundError as exc:
        raise (missing_extra(exc) or exc) from None
    filtered = np.sort(scope.columns(f"SELECT row_id FROM ({matching})", params)["row_id"])
    vectors = _Vectors(scope, how, filtered)
    near = vectors.screen(how.k)  # row ids: a superset of the k nearest
    hits, lexical_scores = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    if how.match == "hybrid":
        scored = bm25(scope, filtered, text)
        hits, lexical_scores = scored.row_ids, scored.scores
    involved = np.union1d(near, hits)  # sorted: a row's place in it is found by searchsorted
    rank, weights = _order_and_weights(scope, involved, order, weighted)
    cosine = vectors.exact(involved)  # aligned with `involved`
    near_at, hit_at = np.searchsorted(involved, near), np.searchsorted(involved, hits)
    nearest = near_at[np.lexsort((rank[near_at], -cosine[near_at]))][:how.k]  # ties: the default order
    chosen = np.zeros(len(involved), dtype=bool)
    chosen[nearest], chosen[hit_at] = True, True
    candidates = np.flatnonzero(chosen)
    candidates = candidates[np.argsort(rank[candidates], kind="stable")]  # the default order
    # rounded first, as the records show them: a caller recomputes the score from its record
    bm25_of = np.zeros(len(involved), dtype=np.float64)
    bm25_of[hit_at] = lexical_scores
    top = float(lexical_scores.max()) if len(lexical_scores) else 0.0
    lexical = round6(bm25_of[candidates] / top) if top > 0 else np.zeros(len(candidates))
    closeness = cosine[candidates]
    semantic = round6(np.where(closeness < 0.0, 0.0, closeness))  # max(cos, 0) as Python's max keeps -0.0
    weight = weights[candidates]
    if how.fusion == "rrf":
        by_bm25 = hit_at[np.lexsort((rank[hit_at], -lexical_scores))]
        fused = _rrf([nearest, by_bm25], len(involved))[candidates]
    else:
        fused = round6(how.alpha * semantic + (1 - how.alpha) * lexical)
    scores = np.where(weight == 1.0, fused, round6(fused * weight))  # round(f × 1.0, 6) is f
    best = np.argsort(-scores, kind="stable")[offset:offset + limit].tolist()  # ties: the default order
    row_ids = involved[candidates]
    items = [Ranked(int(row_ids[i]), float(scores[i]), float(lexical[i]), float(semantic[i]), float(weight[i]))
             for i in best]
    return RankedPage(items, len(candidates), {"candidates": len(filtered), "with_vectors": vectors.count})


def round6(values: Any) -> Any:
    """Python's `round(x, 6)` of each value, as arrays. Python rounds x's exact value (halves
    to even); `x·10⁶` rounded to a double can land on a half, or on the other side of one, so
    the product's exact error (Dekker's two-product, in doubles) says where the exact product
    lies; `k/10⁶` is then the double Python gives (both the nearest to that decimal). The
    sign is x's: -0.0 stays -0.0."""
    import numpy as np

    scaled = values * 1e6
    error = _product_error(values, 1e6, scaled)
    whole = np.floor(scaled)
    above = scaled - whole - 0.5  # exact below 2⁵²; a nonzero one outweighs the error
    up = (above > 0) | ((above == 0) & ((error > 0) | ((error == 0) & (np.fmod(whole, 2) != 0))))
    return np.copysign(np.where(up, whole + 1, whole) / 1e6, values)


def _product_error(a: Any, b: float, product: Any) -> Any:
    """`a·b − product` exactly (Dekker: each factor split into halves of 26 bits)."""
    def halves(x: Any) -> tuple[Any, Any]:
        c = 134217729.0 * x  # 2²⁷ + 1
        high = c - (c - x)
        return high, x - high

    a_high, a_low = halves(a)
    b_high, b_low = halves(b)
    return ((a_high * b_high - product) + a_high * b_low + a_low * b_high) + a_low * b_low


def _order_and_weights(scope: ReadScope, row_ids: Any, order: str, weighted: bool) -> tuple[Any, Any]:
    """Each row's rank in the default order, and its feedback weight (1.0 without feedback, or
    unweighted), aligned with `row_ids`: one join over those rows only."""
    import numpy as np

    if not len(row_ids):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    weight, join = ("w.weight", f"LEFT JOIN {scope.weights()} AS w ON w.observation_id = v.id") if weighted else ("1.0", "")
    # a parameter list converts each value alone: a registered array is one scan; numpy's, as an
    # arrow table would import pyarrow.dataset (half a second of a command-line query)
    scope.con.register("candidate_rows", {"row_id": np.ascontiguousarray(row_ids, dtype=np.int64)})
    try:
        found = scope.columns(f"SELECT c.row_id, coalesce({weight}, 1.0)::DOUBLE AS weight FROM candidate_rows AS c "
                              f"JOIN visible AS v USING (row_id) {join} ORDER BY {order}")
    finally:
        scope.con.unregister("candidate_rows")
    where = np.searchsorted(row_ids, found["row_id"])
    rank = np.empty(len(row_ids), dtype=np.int64)
    rank[where] = np.arange(len(where))
    weights = np.ones(len(row_ids), dtype=np.float64)
    weights[where] = found["weight"]
    return rank, weights


class _Vectors:
    """The filtered rows' vectors: each row's segment and slot (the index's `embedded_texts`,
    read once per index generation), gathered from the mapped segments (a segment gone or
    changed since the index recorded it: its rows have none)."""

    def __init__(self, scope: ReadScope, how: Semantic, row_ids: Any) -> None:
        import numpy as np

        self.query = np.frombuffer(memoryview(how.vector), dtype=np.float32)
        segment_of, slot_of, named = scope.remember(("vector slots",), lambda: _slots(scope))
        known = (row_ids >= 0) & (row_ids < len(segment_of))  # a draft's row (negative) has no vector
        segments = np.full(len(row_ids), -1, dtype=np.int64)
        segments[known] = segment_of[row_ids[known]]
        grouped = np.argsort(segments, kind="stable")  # by segment; row ids stay sorted within each
        numbers, starts = np.unique(segments[grouped], return_index=True)
        self.rows: list[tuple[Any, Any, Any]] = []  # (row ids, slots, segment) per segment
        for number, start, end in zip(numbers.tolist(), starts.tolist(), [*starts[1:].tolist(), len(grouped)]):
            segment = how.cache.open(named[number][0], size=named[number][1]) if number in named else None
            if segment is not None:
                ids = row_ids[grouped[start:end]]
                self.rows.append((ids, slot_of[ids], segment))
        self.count = sum(len(ids) for ids, _slots, _segment in self.rows)

    def screen(self, k: int) -> Any:
        """Row ids (sorted) that hold the `k` nearest by cosine: a float32 product over every
        row, keeping each row within its error bound of the k-th; `exact` then decides."""
        import numpy as np

        if not self.rows:
            return np.empty(0, dtype=np.int64)
        query_norm = float(np.linalg.norm(self.query.astype(np.float64)))  # 0: every cosine is 0
        ids = np.concatenate([i for i, _s, _seg in self.rows])
        rough = np.concatenate([self._rough(slots, segment, query_norm) for _i, slots, segment in self.rows])
        if len(rough) > k:
            kth = np.partition(rough, len(rough) - k)[len(rough) - k]
            margin = 4 * len(self.query) * 2.0 ** -24 + 1e-6  # float32's error bound on a cosine, twice
            ids = ids[rough >= kth - margin]
        return np.sort(ids).astype(np.int64)

    def _rough(self, slots: Any, segment: Any, query_norm: float) -> Any:
        import numpy as np

        if len(slots) * 2 > segment.count:
            dots = (segment.matrix @ self.query)[slots]
        else:
            dots = segment.matrix[slots] @ self.query
        norms = segment.norms[slots] * query_norm
        return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)

    def exact(self, row_ids: Any) -> Any:
        """Exact (float64) cosines of `row_ids` (sorted), 0 for a row without a vector or with a
        zero vector (a text without a known token), never NaN. Each row alone, the same way
        always, so a score never depends on which other rows were there."""
        import numpy as np

        found = np.zeros(len(row_ids), dtype=np.float64)
        query = self.query.astype(np.float64)
        query_norm = float(np.linalg.norm(query))
        for ids, slots, segment in self.rows:
            hit = among(row_ids, ids)
            if not hit.any():
                continue
            matrix = segment.matrix[slots[hit]].astype(np.float64)
            dots = np.einsum("ij,j->i", matrix, query)
            norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)) * query_norm
            found[np.searchsorted(row_ids, ids[hit])] = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
        return found


def _slots(scope: ReadScope) -> tuple[Any, Any, dict[int, tuple[str, int]]]:
    """Every indexed row's segment (-1: none) and slot, by row id, and the recorded segments:
    over every tenant's rows (a map, indexed by the caller's filtered rows only)."""
    import numpy as np

    stored = scope.stored()
    found = scope.columns(f"SELECT t.row_id, e.segment, e.slot FROM {stored}.obs_texts AS t "
                          f"JOIN {stored}.embedded_texts AS e USING (text_key)")
    size = int(found["row_id"].max()) + 1 if len(found["row_id"]) else 0
    segment_of, slot_of = np.full(size, -1, dtype=np.int32), np.zeros(size, dtype=np.int32)
    segment_of[found["row_id"]], slot_of[found["row_id"]] = found["segment"], found["slot"]
    named = {n: (name, s) for n, name, s in scope.rows(f"SELECT segment, name, size FROM {stored}.vector_segments")}
    return segment_of, slot_of, named


def _rrf(rankings: list[Any], size: int) -> Any:
    """Reciprocal rank fusion of `rankings` (positions in the involved rows, best first), by
    position, rounded: each ranking adds 1/(k + rank) in turn, as a sum from 0.0 would."""
    import numpy as np

    fused = np.zeros(size, dtype=np.float64)
    for ranking in rankings:
        fused[ranking] += 1.0 / (RRF_K + np.arange(1, len(ranking) + 1))
    return round6(fused)
