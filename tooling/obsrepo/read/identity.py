"""The identity review queue (docs/design.md §20) as a caller sees it.

An unbound caller at the indexed commit, with no `as_of`, reads the index's own
`identity_candidates`. Any other view (a tenant binding, a ceiling, another commit, a valid
time) computes the queue again from the snapshots reduced over the rows it sees, with the
same SQL (index/identity.py): a pair appears only when both entities are visible, and every
value and observation of its evidence is one the caller can see, by construction.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ..times import format_timestamp
from .scope import ReadScope

ORDER = "score DESC, entity_a, entity_b"


def candidates(scope: ReadScope, entity_type: str | None = None, min_score: float | None = None,
               as_of: datetime | None = None, limit: int = 50, offset: int = 0) -> dict[str, Any]:
    table = "identity_candidates" if scope.as_indexed and as_of is None else _computed(scope, entity_type, as_of)
    clauses: list[str] = []
    params: list[object] = []
    if entity_type:
        clauses.append("entity_type = ?")
        params.append(entity_type)
    if min_score is not None:
        clauses.append("score >= ?")
        params.append(min_score)
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    total = scope.one(f"SELECT count(*) FROM {table} {where}", params)[0]
    rows = scope.rows(f"SELECT entity_a, entity_b, entity_type, score, tier, evidence FROM {table} {where} "
                      f"ORDER BY {ORDER} LIMIT ? OFFSET ?", [*params, limit, offset])
    return {"at_commit": scope.at_commit,
            "candidates": [{"entities": [a, b], "entity_type": kind, "score": round(score, 6), "tier": tier,
                            "evidence": json.loads(evidence)} for a, b, kind, score, tier, evidence in rows],
            "total": total, "limit": limit, "offset": offset}


def _computed(scope: ReadScope, entity_type: str | None, as_of: datetime | None) -> str:
    """The queue over the snapshots of what `scope` sees, as a temporary table: the snapshots every
    other read reduces (§19): at `as_of`, the observations whose period holds it; without, those
    without a period and those whose period holds the commit's time."""
    import pyarrow as pa

    from ..format.reduce import merge_map, retracted_ids
    from ..index.identity import compute, specs_at
    from ..index.identity_table import distinct_pairs
    from ..index.reducer_rows import CANDIDATES, all_policies, commit_instant
    from ..index.sqlreduce import reduce_all

    special = scope.special()
    merges = merge_map(special, retracted_ids(special))
    snaps = reduce_all(scope.con, CANDIDATES.format(relation="visible", where="o.entity IS NOT NULL"), [], special,
                       all_policies(scope.git, scope.at_commit), at_commit=scope.at_commit,
                       as_of=format_timestamp(as_of) if as_of is not None else None,
                       valid_at=commit_instant(scope.git, scope.at_commit))
    rows = [{"entity_id": s["entity_id"], "entity_type": s["entity_type"], "snapshot": json.dumps(s["snapshot"]),
             "provenance": json.dumps(s["provenance"]), "deleted": bool(s["deleted"])} for s in snaps.values()]
    schema = pa.schema([("entity_id", pa.string()), ("entity_type", pa.string()), ("snapshot", pa.string()),
                        ("provenance", pa.string()), ("deleted", pa.bool_())])
    scope.con.register("seen_snapshots", pa.Table.from_pylist(rows, schema=schema))
    try:
        return compute(scope.con, "seen_snapshots", specs_at(scope.git, scope.at_commit),
                       distinct_pairs(scope.con, "visible", merges), p="seen", entity_type=entity_type)
    finally:
        scope.con.unregister("seen_snapshots")
