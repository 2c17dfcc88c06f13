"""Ranking by meaning (docs/design.md §15): `--match semantic|hybrid` over the filtered rows.

Everything is computed over the rows that passed every filter (tenant, ceiling, commit, scope,
type, source, dates, retraction, retention) and nothing else, so no other tenant's row shapes
a score. Cosine is exact (every filtered row with a vector, no approximate index): the same
commit, inputs and embedder give the same page. Candidates are the `k` nearest by cosine, and
in `hybrid` every BM25 hit too; relevance is `α·max(cos, 0) + (1−α)·bm25/max(bm25)` (`cc`) or
reciprocal rank fusion (`rrf`, k = 60), rounded to 6 decimals, times the hints' factor
(hints.py), rounded, times the feedback weight; ties
go by the default order.

Speed: the index maps each filtered row to its vector's segment and slot (`obs_vectors`),
so the rows' vectors are gathered from the mapped segments in one step per segment and
screened by one float32 matrix-vector product. The cosines that decide (every row within the
float32 error bound of the k-th, and every candidate) are then computed again in float64 from
the same rows, one at a time alike, so a score never depends on which other rows were there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..embed import DEFERRED_TEXTS
from ..errors import missing_extra
from ..index.vectors import TEXT_SQL, waiting_after
from .bm25 import filtered_rows
from .context import lexical as with_context
from .hints import factors, most
from .places import places
from .rowids import among
from .scope import ReadScope

RRF_K = 60


@dataclass(frozen=True)
class Semantic:
    """How to rank: `match` semantic|hybrid, `alpha`, `fusion` cc|rrf, `k` nearest, the query's
    vector, the repository's vector cache of the embedder (embed.cache.VectorCache), and the
    embedder itself when it may embed the few texts an update left pending (a local model)."""

    match: str
    alpha: float
    fusion: str
    k: int
    vector: Any
    cache: Any
    embedder: Any = None


@dataclass(frozen=True)
class Ranked:
    row_id: int
    score: float
    lexical: float
    semantic: float
    weight: float
    hint: float


@dataclass(frozen=True)
class RankedPage:
    """One page of candidates, best first; `total` candidates; `coverage` {candidates,
    with_vectors} counts the filtered rows and those with vectors."""

    items: list[Ranked]
    total: int
    coverage: dict[str, int]


def ranked(scope: ReadScope, matching: str, params: list, text: str, how: Semantic, order: str,
           weighted: bool, offset: int, limit: int, hints: tuple[bool, bool] = (True, True)) -> RankedPage:
    """The candidates ranked, the page at `offset`; `weighted`: times each observation's
    feedback weight (else 1.0). Every candidate's scores are arrays (hybrid's candidates are
    every BM25 hit, tens of thousands in a large repository), rounded as Python rounds; only
    the rows that may reach the page (`_reaching`) get an exact cosine and a place in the
    default order (SQL), and only the page's records are made one by one."""
    try:
        import numpy as np
    except ModuleNotFoundError as exc:
        raise (missing_extra(exc) or exc) from None
    filtered = filtered_rows(scope, matching, params)
    vectors = _Vectors(scope, how, filtered.rows)
    near = vectors.screen(how.k)  # row ids: a superset of the k nearest
    hits, lexical_scores = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    if how.match == "hybrid":
        scored = with_context(scope, filtered, matching, params, text)  # the hints apply to the fused score
        hits, lexical_scores = scored.row_ids, scored.scores
    top = float(lexical_scores.max()) if len(lexical_scores) else 0.0
    lexical_of_hits = round6(lexical_scores / top) if top > 0 else np.zeros(len(hits))
    weight_of_hits = scope.row_weights(hits) if weighted else np.ones(len(hits))
    kept = np.ones(len(hits), dtype=bool)
    if how.fusion != "rrf":  # rrf places every hit by its BM25 rank: all of them then
        kept = _reaching(how.alpha, vectors.rough_of(hits), vectors.margin, lexical_of_hits, weight_of_hits,
                         offset + limit, most(text, *hints))
    involved = np.union1d(near, hits[kept])  # sorted: a row's place in it is found by searchsorted
    hint_of = factors(scope, involved, text, *hints)
    if hint_of is None:
        hint_of = np.ones(len(involved))
    rank = places(scope, involved, order)
    cosine = vectors.exact(involved)  # aligned with `involved`
    near_at, hit_at = np.searchsorted(involved, near), np.searchsorted(involved, hits[kept])
    nearest = near_at[np.lexsort((rank[near_at], -cosine[near_at]))][:how.k]  # ties: the default order
    chosen = np.zeros(len(involved), dtype=bool)
    chosen[nearest], chosen[hit_at] = True, True
    candidates = np.flatnonzero(chosen)
    candidates = candidates[np.argsort(rank[candidates], kind="stable")]  # the default order
    # rounded first, as the records show them: a caller recomputes the score from its record
    lexical_of, weights = np.zeros(len(involved)), np.ones(len(involved))
    lexical_of[hit_at], weights[hit_at] = lexical_of_hits[kept], weight_of_hits[kept]
    if weighted:
        weights[nearest] = scope.row_weights(involved[nearest])
    lexical = lexical_of[candidates]
    closeness = cosine[candidates]
    semantic = round6(np.where(closeness < 0.0, 0.0, closeness))  # max(cos, 0) as Python's max keeps -0.0
    weight = weights[candidates]
    hint = hint_of[candidates]
    if how.fusion == "rrf":
        by_bm25 = hit_at[np.lexsort((rank[hit_at], -lexical_scores))]
        fused = _rrf([nearest, by_bm25], len(involved))[candidates]
    else:
        fused = _fused(how.alpha, semantic, lexical)
    scores = _weighted(_weighted(fused, hint), weight)
    best = np.argsort(-scores, kind="stable")[offset:offset + limit].tolist()  # ties: the default order
    columns = [values[best].tolist() for values in (involved[candidates], scores, lexical, semantic, weight, hint)]
    items = [Ranked(*item) for item in zip(*columns)]
    total = len(hits) + int(np.count_nonzero(~among(hits, involved[nearest])))
    return RankedPage(items, total, {"candidates": len(filtered.rows), "with_vectors": vectors.count})


def _fused(alpha: float, semantic: Any, lexical: Any) -> Any:
    return round6(alpha * semantic + (1 - alpha) * lexical)


def _weighted(fused: Any, weight: Any) -> Any:
    import numpy as np

    return np.where(weight == 1.0, fused, round6(fused * weight))  # round(f × 1.0, 6) is f


def _reaching(alpha: float, rough: Any, margin: float, lexical: Any, weight: Any, need: int, most: float = 1.0) -> Any:
    """Which BM25 hits may reach the first `need` places (a mask). A hit's score is
    `round6(round6(round6(α·round6(max(cos, 0)) + (1−α)·lexical) × hint) × weight)`, the hint
    between 1 and `most`: within `slack` of the same without the roundings (each moves a value
    by at most half a millionth), and that is monotone in the cosine (α, the hint and the weight
    ≥ 0), which lies within `margin` of its float32 value. So each hit's score lies between its
    `low` (hint 1) and `high` (hint `most`), and a hit whose `high` is below the `need`-th best
    `low` has `need` candidates above it."""
    import numpy as np

    if len(rough) <= need or (weight < 0).any():
        return np.ones(len(rough), dtype=bool)
    slack = 2e-6 * (1 + weight * most)  # the roundings' half millionths (four at most), twice
    base = (1 - alpha) * lexical
    low = (alpha * np.maximum(rough - margin, 0.0) + base) * weight - slack
    high = (alpha * np.maximum(rough + margin, 0.0) + base) * weight * most + slack
    bar = np.partition(low, len(low) - need)[len(low) - need]
    return high >= bar


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


class _Vectors:
    """The filtered rows' vectors: each row's segment and slot (the index's `obs_vectors`,
    read once per index generation), in the mapped segments (a segment gone or changed since
    the index recorded it: its rows have none). Their rough cosines (float32) are computed for
    every filtered row at once: a segment most of whose rows are filtered by one product over
    all of it, the others by their rows; a row's place among the segments' rows laid end to
    end says where its cosine is, so no loop runs per row or per segment's rows."""

    def __init__(self, scope: ReadScope, how: Semantic, row_ids: Any) -> None:
        import numpy as np

        self.query = np.frombuffer(memoryview(how.vector), dtype=np.float32)
        self.margin = 4 * len(self.query) * 2.0 ** -24 + 1e-6  # float32's error bound on a cosine, twice
        self.segment_of, self.slot_of, named, waiting_after = scope.remember(("vector slots",), lambda: _slots(scope))
        self.row_ids = row_ids
        numbers = max(named, default=-1) + 1
        self.segments: list[Any] = [None] * numbers
        for number, (name, size) in named.items():
            self.segments[number] = how.cache.open(name, size=size)
        self.filled = np.empty(0, dtype=np.int64)  # rows given their vectors here (sorted)
        counts = self._lay_out()
        if how.embedder is not None:  # the rows whose texts an update left pending, when they are few
            pending = (self._places(row_ids)[0] < 0) & (row_ids > waiting_after)
            if 0 < np.count_nonzero(pending) <= PENDING_ROWS:  # else an update failed: they show as missing
                self.filled, extra = _pending_vectors(scope, how, row_ids[pending])
                self.segments.append(extra)
                counts = self._lay_out()
        self.segment, self.place = self._places(row_ids)
        self.count = int(np.count_nonzero(self.segment >= 0))
        self.rough = self._rough(how, counts)  # aligned with `row_ids`

    def _lay_out(self) -> Any:
        """Each segment's row count; the segments laid end to end (`starts`, `present`)."""
        import numpy as np

        counts = np.array([0 if s is None else s.count for s in self.segments], dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum(counts)])  # each segment's first place, end to end
        self.present = counts > 0
        return counts

    def _places(self, row_ids: Any) -> tuple[Any, Any]:
        """Each row's segment (-1: no vector) and place end to end."""
        import numpy as np

        known = (row_ids >= 0) & (row_ids < len(self.segment_of))  # a draft's row (negative) has no vector
        segment = np.full(len(row_ids), -1, dtype=np.int64)
        segment[known] = self.segment_of[row_ids[known]]
        mapped = segment >= 0
        mapped[mapped] = self.present[segment[mapped]]
        segment[~mapped] = -1
        place = np.zeros(len(row_ids), dtype=np.int64)
        place[mapped] = self.starts[segment[mapped]] + self.slot_of[row_ids[mapped]]
        if len(self.filled):  # the last segment: the vectors embedded here, a row each
            at = np.minimum(np.searchsorted(self.filled, row_ids), len(self.filled) - 1)
            extra = ~mapped & (self.filled[at] == row_ids)
            segment[extra] = len(self.segments) - 1
            place[extra] = self.starts[-2] + at[extra]
        return segment, place

    def _rough(self, how: Semantic, counts: Any) -> Any:
        import numpy as np

        query_norm = float(np.linalg.norm(self.query.astype(np.float64)))  # 0: every cosine is 0
        # the unit query: each product is at most its row's norm, finite as every cached norm is
        # (docs/design.md §8b), where a large query's products could overflow float32 (then NaN)
        unit = (self.query.astype(np.float64) / query_norm).astype(np.float32) if query_norm > 0 else self.query
        mine = self.segment >= 0
        wanted = np.bincount(self.segment[mine], minlength=len(self.segments))
        dots = np.zeros(int(self.starts[-1]), dtype=np.float32)
        norms = np.zeros(int(self.starts[-1]), dtype=np.float32)
        whole = wanted * 2 > counts
        for number in np.flatnonzero(whole & self.present).tolist():
            segment, start = self.segments[number], int(self.starts[number])
            dots[start:start + segment.count] = _products(segment.matrix, unit)
            norms[start:start + segment.count] = segment.norms
        some = mine & ~whole[np.maximum(self.segment, 0)] if len(whole) else mine  # no segment: no row has a vector
        order, runs = _by_segment(self.segment[some], self.place[some])
        for number, start, end in runs:
            places = self.place[some][order[start:end]]
            segment, slots = self.segments[number], places - self.starts[number]
            dots[places], norms[places] = _products(segment.matrix[slots], unit), segment.norms[slots]
        found, scale = dots[self.place[mine]], norms[self.place[mine]] * np.float32(query_norm > 0)
        rough = np.zeros(len(self.row_ids), dtype=np.float32)
        rough[mine] = np.divide(found, scale, out=np.zeros_like(found), where=scale > 0)
        return rough

    def screen(self, k: int) -> Any:
        """Row ids (sorted) that hold the `k` nearest by cosine: each row within the float32
        error bound of the k-th; `exact` then decides."""
        import numpy as np

        mine = self.segment >= 0
        ids, rough = self.row_ids[mine], self.rough[mine]
        if len(rough) > k:
            kth = np.partition(rough, len(rough) - k)[len(rough) - k]
            ids = ids[rough >= kth - self.margin]
        return ids.astype(np.int64)

    def rough_of(self, row_ids: Any) -> Any:
        """The rough cosines of `row_ids` (sorted, among the filtered rows), 0 without a vector."""
        import numpy as np

        return self.rough[np.searchsorted(self.row_ids, row_ids)].astype(np.float64)

    def exact(self, row_ids: Any) -> Any:
        """Exact (float64) cosines of `row_ids` (sorted), 0 for a row without a vector or with a
        zero vector (a text without a known token), never NaN. Each row alone, the same way
        always, so a score never depends on which other rows were there."""
        import numpy as np

        found = np.zeros(len(row_ids), dtype=np.float64)
        segment, place = self._places(row_ids)
        mine = np.flatnonzero(segment >= 0)
        if not len(mine):
            return found
        rows = np.empty((len(mine), len(self.query)), dtype=np.float32)
        order, runs = _by_segment(segment[mine], place[mine])
        for number, start, end in runs:
            rows[start:end] = self.segments[number].matrix[place[mine][order[start:end]] - self.starts[number]]
        matrix, query = rows.astype(np.float64), self.query.astype(np.float64)
        dots = np.einsum("ij,j->i", matrix, query)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)) * float(np.linalg.norm(query))
        found[mine[order]] = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
        return found


PENDING_ROWS = 4 * DEFERRED_TEXTS  # filtered rows without a vector a query embeds, at most


@dataclass(frozen=True)
class _Embedded:
    """Vectors embedded by a query (the texts an update left pending), laid out as a segment's."""

    matrix: Any
    norms: Any

    @property
    def count(self) -> int:
        return len(self.norms)


def _pending_vectors(scope: ReadScope, how: Semantic, row_ids: Any) -> tuple[Any, _Embedded]:
    """The vectors of `row_ids` (sorted rows without one in the index: their texts wait for a
    later update), embedded now: (the rows, their vectors as a segment). Kept for the index's
    generation, by row, so a kept-open reader embeds each text once. Norms as the cache's
    segments have them, so every cosine is what it is once the index holds the vector."""
    import numpy as np

    known = scope.remember(("pending vectors", how.cache.fingerprint), dict)
    wanted = [row for row in row_ids.tolist() if row not in known]
    if wanted:
        with scope.registered("pending_rows", {"row_id": np.asarray(wanted, dtype=np.int64)}):
            texts = scope.rows(f"SELECT o.row_id, {TEXT_SQL} FROM pending_rows AS p "
                               f"JOIN {scope.stored()}.obs_versions AS o USING (row_id)")
        distinct = sorted({text for _row, text in texts})
        vectors = dict(zip(distinct, how.embedder.embed(distinct), strict=True))
        for row, text in texts:
            known[row] = np.frombuffer(memoryview(vectors[text]), dtype=np.float32)
    rows = np.asarray([row for row in row_ids.tolist() if row in known], dtype=np.int64)
    matrix = np.array([known[row] for row in rows.tolist()], dtype="<f4").reshape(len(rows), len(how.vector))
    norms = np.linalg.norm(matrix.astype(np.float64), axis=1).astype("<f4")  # embed.cache.VectorCache.add's
    return rows, _Embedded(matrix, norms)


def _products(matrix: Any, query: Any) -> Any:
    """Each float32 row's product with the query, in float32 (the screen's: within its error
    bound, whatever the order of the sums). numpy's own loop, not BLAS: at 100,000 rows a
    third of the CPU of a BLAS call, whose threads also keep spinning after it."""
    import numpy as np

    return np.einsum("ij,j->i", matrix, query)


def _by_segment(segments: Any, places: Any) -> tuple[Any, list[tuple[int, int, int]]]:
    """The order that sorts `places` (and so `segments`, laid end to end in their order), and
    (segment, start, end) of each segment's run in it."""
    import numpy as np

    order = np.argsort(places, kind="stable")
    ordered = segments[order]
    starts = np.flatnonzero(np.diff(ordered, prepend=-1)).tolist()
    return order, [(int(ordered[a]), a, b) for a, b in zip(starts, [*starts[1:], len(order)])]


def _slots(scope: ReadScope) -> tuple[Any, Any, dict[int, tuple[str, int]], float]:
    """Every indexed row's segment (-1: none) and slot, by row id, the recorded segments, and
    the row after which texts may wait for an update (index.vectors.waiting_after): over every
    tenant's rows (a map, indexed by the caller's filtered rows only)."""
    import numpy as np

    stored = scope.stored()
    found = scope.columns(f"SELECT row_id, segment, slot FROM {stored}.obs_vectors")
    size = int(found["row_id"].max()) + 1 if len(found["row_id"]) else 0
    segment_of, slot_of = np.full(size, -1, dtype=np.int32), np.zeros(size, dtype=np.int32)
    segment_of[found["row_id"]], slot_of[found["row_id"]] = found["segment"], found["slot"]
    named = {n: (name, s) for n, name, s in scope.rows(f"SELECT segment, name, size FROM {stored}.vector_segments")}
    return segment_of, slot_of, named, waiting_after(scope.con, f"{stored}.meta")


def _rrf(rankings: list[Any], size: int) -> Any:
    """Reciprocal rank fusion of `rankings` (positions in the involved rows, best first), by
    position, rounded: each ranking adds 1/(k + rank) in turn, as a sum from 0.0 would."""
    import numpy as np

    fused = np.zeros(size, dtype=np.float64)
    for ranking in rankings:
        fused[ranking] += 1.0 / (RRF_K + np.arange(1, len(ranking) + 1))
    return round6(fused)
