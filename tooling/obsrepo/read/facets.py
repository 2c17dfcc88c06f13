"""Facets of a query (docs/design.md §17): how many of the observations a query matches, paging
aside, have each type, source, entity type and tenant value, so the inspector's search page can
offer them as filters. Read through the same scope and filters as `run_query`, so a facet never
counts a row the query could not return (another tenant's, one above the ceiling, a retracted one).
"""

from __future__ import annotations

from typing import Any

from ..index.rows import TOKENS
from .query import QueryRequest, where_matching
from .scope import TENANT_COLUMNS, ReadScope

FACETS = {"type": "o.type", "source": "o.source", "entity_type": "o.entity_type",
          **{key: f"o.{column}" for key, column in TENANT_COLUMNS.items()}}
TOP = 20  # values per facet, the most frequent first


def facets(scope: ReadScope, request: QueryRequest) -> dict[str, Any]:
    """{facet: [{value, count}…]} over every observation the query matches; `total` of them."""
    where, params = where_matching(scope, request)
    if request.text:  # the rows a text search can rank: those holding at least one of its terms
        where += (" AND o.row_id IN (SELECT row_id FROM visible_terms WHERE term IN (SELECT DISTINCT stem(t, 'porter') "
                  f"FROM (SELECT unnest({TOKENS.format('?')}) AS t) WHERE t <> ''))")
        params.append(request.text)
    matching = f"SELECT * FROM visible AS o WHERE {where}"
    counts: dict[str, Any] = {}
    for name, column in FACETS.items():
        rows = scope.rows(f"SELECT {column.removeprefix('o.')} AS value, count(*) AS n FROM ({matching}) "
                          "WHERE value IS NOT NULL GROUP BY ALL ORDER BY n DESC, value LIMIT ?", params + [TOP])
        counts[name] = [{"value": value, "count": n} for value, n in rows]
    total = scope.one(f"SELECT count(*) FROM ({matching})", params)[0]
    return {"facets": counts, "total": total, "at_commit": scope.at_commit}
