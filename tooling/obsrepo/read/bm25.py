"""BM25 over the filtered rows, the lexical half of every text query (docs/design.md §6, §15)."""

from __future__ import annotations

from ..index.rows import TOKENS

K1, B = 1.2, 0.75


def bm25_scored(matching: str) -> str:
    """`WITH v AS (matching), …, scored (row_id, score)`: each matching row's BM25 score for the
    text (the one parameter after `matching`'s), rows without a term of it left out."""
    tokens = TOKENS.format("?")
    return f"""
    WITH v AS ({matching}),
    q AS (SELECT DISTINCT stem(t, 'porter') AS term FROM (SELECT unnest({tokens}) AS t) WHERE t <> ''),
    lens AS (SELECT v.row_id, coalesce(d.doc_len, 0) AS doc_len FROM v LEFT JOIN visible_doclen AS d USING (row_id)),
    stats AS (SELECT count(*) AS n, coalesce(avg(doc_len), 0) AS avgdl FROM lens),
    hits AS (SELECT t.row_id, t.term, t.tf, l.doc_len FROM visible_terms AS t JOIN q USING (term) JOIN lens l USING (row_id)),
    df AS (SELECT term, count(*) AS df FROM hits GROUP BY term),
    scored AS (
        SELECT h.row_id, round(sum(ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))
               * h.tf * {K1 + 1} / (h.tf + {K1} * (1 - {B} + {B} * h.doc_len / greatest(stats.avgdl, 1)))), 6) AS score
        FROM hits h JOIN df USING (term), stats GROUP BY h.row_id
    )"""
