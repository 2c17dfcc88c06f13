"""BM25 over the filtered rows, the lexical half of every text query (docs/design.md §6, §15).

N and the mean document length are those of the rows that passed every filter, so another
tenant's documents (or any filtered-out ones) never change a score.

Speed: the pieces are read by plain scans, as arrays — the text's terms (kept per text), the
filtered rows, the visible rows' lengths (kept per index generation and view), the terms'
postings (the term table is stored by term: the scan reads their blocks only) — and joined and
scored in numpy. One statement that joined them in DuckDB cost three to four times as much
(its joins run over every filtered row, not over the hits). The arithmetic is that statement's,
operation for operation: each term's idf by the C library's log (DuckDB's `ln`), the same
products and quotients in the same order, the sum per row, then `round` half away from zero as
DuckDB rounds; so every score is the one SQL gave.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass
from typing import Any

from ..index.rows import TOKENS
from .rowids import ByRow, among, ascending
from .scope import ReadScope, literal

K1, B = 1.2, 0.75
FILTERS_KEPT = 8  # filters whose rows a kept-open reader keeps per index generation and view
_KEEPING = threading.Lock()


@dataclass
class Filtered:
    """The rows that passed every filter of a text query (sorted row ids, read-only), and the
    sum of their lengths once BM25 asked for it."""

    rows: Any
    length_sum: int | None = None
    neighbours: Any = None  # context.neighbours: each row's previous and next in its thread


def filtered_rows(scope: ReadScope, matching: str, params: list) -> Filtered:
    """The rows of `matching` (a query over `visible`); a kept-open reader keeps those of its
    last few filters for the index generation and view (a million ids are read and sorted
    otherwise, whatever the text)."""
    def read() -> Filtered:
        rows = ascending(scope.columns(f"SELECT row_id FROM ({matching})", params)["row_id"])
        rows.flags.writeable = False
        return Filtered(rows)

    kept: dict = scope.remember(("filtered rows", *scope.view_key()), dict)
    key = (matching, repr(list(params)))
    with _KEEPING:
        found = kept.pop(key, None)
    found = found or read()
    with _KEEPING:
        kept[key] = found  # the newest last
        while len(kept) > FILTERS_KEPT:
            kept.pop(next(iter(kept)))
    return found


@dataclass(frozen=True)
class Scored:
    """The rows holding a term of the text (sorted row ids) and their BM25 scores, rounded to
    6 decimals."""

    row_ids: Any
    scores: Any


# Words that ask rather than say: a text's function words and question words carry no topic
# ("when did she go to the museum" is about `go` and `museum`); they are dropped from the text
# (never from documents), unless nothing else is left. English only, and only whole tokens.
QUERY_STOP_WORDS = frozenset("""
a about after all also am an and any are as at be been before being but by can could did do does doing done for
from had has have having he her hers him his how i if in into is it its just me might my no nor not of on or our
ours out over she should so some such than that the their theirs them then there these they this those through
to too under until up very was we were what when where which while who whom whose why will with would you your
yours
""".split())


def text_terms(scope: ReadScope, text: str) -> list[str]:
    """The text's distinct terms, tokenized and stemmed as the index does its documents, less
    QUERY_STOP_WORDS when any other term is left."""
    def terms() -> list[str]:
        found = _stemmed(scope, text)
        said = [stem for token, stem in found if token not in QUERY_STOP_WORDS] if DROP_STOP_WORDS else []
        return sorted(set(said or [stem for _, stem in found]))

    return scope.remember(("text terms", DROP_STOP_WORDS, text), terms)


STEMS_KEPT = 100_000  # the tokens' stems a kept-open reader keeps
_ASCII_SPLIT = re.compile(r"[^a-z0-9]+")


def _stemmed(scope: ReadScope, text: str) -> list[tuple[str, str]]:
    """(token, stem) of each of the text's tokens, in order, as the index's TOKENS and `stem`
    make them. An ASCII text is split here: `strip_accents` changes nothing in it, `lower` is
    ASCII's, and `[^\\p{L}\\p{N}]+` is `[^a-z0-9]+` once lowered; DuckDB compiles that Unicode
    pattern for every statement (~2 ms), the stems then cost one small statement (none for the
    tokens a kept-open reader has stemmed before)."""
    if not text.isascii():
        return scope.rows(f"SELECT t, stem(t, 'porter') FROM (SELECT unnest({TOKENS.format('?')}) AS t) WHERE t <> ''",
                          [text])
    tokens = [token for token in _ASCII_SPLIT.split(text.lower()) if token]
    known: dict[str, str] = scope.remember(("stems",), dict) if scope.memo is not None else {}
    with _KEEPING:
        stems = {token: known[token] for token in set(tokens) if token in known}
    wanted = sorted(set(tokens) - stems.keys())
    if wanted:
        found = dict(scope.rows("SELECT t, stem(t, 'porter') FROM (SELECT unnest(?::VARCHAR[]) AS t)", [wanted]))
        stems.update(found)
        with _KEEPING:
            if len(known) + len(found) > STEMS_KEPT:
                known.clear()
            known.update(found)
    return [(token, stems[token]) for token in tokens]


DROP_STOP_WORDS = True


def bm25(scope: ReadScope, filtering: Filtered, text: str) -> Scored:
    """Each of the `filtering` rows that holds a term of `text`, scored."""
    import numpy as np

    filtered = filtering.rows
    terms = text_terms(scope, text)
    if not terms or not len(filtered):
        return Scored(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64))
    found = _postings(scope, terms)
    mine = among(filtered, found["row_id"])
    row_ids, tf, term = found["row_id"][mine], found["tf"][mine].astype(np.float64), found["term"][mine]
    lengths_of = _lengths(scope)
    documents = len(filtered)
    if filtering.length_sum is None:
        filtering.length_sum = int(lengths_of(filtered).sum())
    average = filtering.length_sum / documents  # DuckDB's avg of integers: the sum over the count
    df = np.bincount(term, minlength=len(terms))
    idf = np.array([math.log(1 + (documents - int(n) + 0.5) / (int(n) + 0.5)) for n in df.tolist()])
    length = 0.75 * lengths_of(row_ids).astype(np.float64)
    each = idf[term] * tf * (K1 + 1) / (tf + K1 * ((1 - B) + length / max(average, 1)))
    hit, sums = _per_row(row_ids, each)
    return Scored(hit, _round6(sums))


POSTINGS_KEPT = 2_000_000  # a kept-open reader keeps the visible rows' postings whole up to this many (~30 MB)


def _postings(scope: ReadScope, terms: list[str]) -> dict[str, Any]:
    """{row_id, tf, term} of every visible row holding one of `terms` (sorted), `term` the
    term's place in them; ordered by term, then row id, whichever way they were read (the
    scores add in that order). A kept-open reader reads the visible rows' postings once per
    index generation and view and looks the terms up (the text's terms are then no scan);
    a command reads the terms' own blocks."""
    import numpy as np

    whole = scope.remember(("postings", *scope.view_key()), lambda: _all_postings(scope)) if scope.memo is not None else None
    if whole is None:
        listed = ", ".join(literal(term) for term in terms)
        found = scope.columns(f"SELECT row_id, tf, list_position([{listed}], term) - 1 AS term FROM visible_terms "
                              f"WHERE term IN ({listed})")
        found = {name: np.asarray(found[name]) for name in ("row_id", "tf", "term")}
    else:
        spans, row_id, tf = whole
        parts = [(place, spans[t]) for place, t in enumerate(terms) if t in spans]
        found = {"row_id": np.concatenate([row_id[a:b] for _, (a, b) in parts] or [np.empty(0, np.int64)]),
                 "tf": np.concatenate([tf[a:b] for _, (a, b) in parts] or [np.empty(0, np.int64)]),
                 "term": np.concatenate([np.full(b - a, place) for place, (a, b) in parts] or [np.empty(0, np.int64)])}
    order = np.lexsort((found["row_id"], found["term"]))
    return {name: values[order] for name, values in found.items()}


def _all_postings(scope: ReadScope) -> Any:
    """({term: (start, end)}, row ids, tfs) of the visible rows, by term; None past POSTINGS_KEPT."""
    import numpy as np

    if scope.one("SELECT count(*) FROM visible_terms")[0] > POSTINGS_KEPT:
        return None
    found = scope.columns("SELECT term, row_id, tf FROM visible_terms ORDER BY term, row_id")
    names, starts = np.unique(found["term"], return_index=True)
    ends = np.append(starts[1:], len(found["term"]))
    spans = dict(zip(names.tolist(), zip(starts.tolist(), ends.tolist())))
    return spans, np.asarray(found["row_id"], dtype=np.int64), np.asarray(found["tf"])


def _per_row(row_ids: Any, each: Any) -> tuple[Any, Any]:
    """The distinct row ids (ascending) and the sum of `each` over each one's postings, added in
    the order the postings come (as `np.bincount` adds): over the range of the ids when it is
    not much larger than the postings, else by sorting them."""
    import numpy as np

    if len(row_ids) and int(row_ids.min()) >= 0 and int(row_ids.max()) < 16 * len(row_ids) + 65536:
        top = int(row_ids.max()) + 1
        hit = np.flatnonzero(np.bincount(row_ids, minlength=top))
        return hit.astype(np.int64), np.bincount(row_ids, weights=each, minlength=top)[hit]
    hit, which = np.unique(row_ids, return_inverse=True)
    return hit.astype(np.int64), np.bincount(which, weights=each, minlength=len(hit))


def _lengths(scope: ReadScope) -> Any:
    """A function from row ids to their token counts (0 for a row without one), the visible
    rows' lengths read once per index generation and view."""
    import numpy as np

    def read() -> ByRow:
        found = scope.columns("SELECT row_id, doc_len FROM visible_doclen")
        return ByRow(found["row_id"], found["doc_len"].astype(np.int64), 0)

    return scope.remember(("doc lengths", *scope.view_key()), read).of


def _round6(values: Any) -> Any:
    """DuckDB's `round(x, 6)`: `std::round(x·10⁶) / 10⁶`, half away from zero, exactly (the
    fraction of a double below 2⁵² is exact)."""
    import numpy as np

    scaled = values * 1e6
    whole = np.trunc(scaled)
    return (whole + np.where(np.abs(scaled - whole) >= 0.5, np.sign(scaled), 0.0)) / 1e6
