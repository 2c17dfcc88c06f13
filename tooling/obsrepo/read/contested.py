"""Contested values over the index (docs/design.md §19): every contest at a commit and a valid
time, and one entity's.

Reads through a `ReadScope`: the rows are already those of its commit and tenant binding, so a
contest that only another tenant's observation makes does not exist for a bound caller."""

from __future__ import annotations

from typing import Any

from ..format.reduce import merge_map, retracted_ids, survivor
from ..index.reducer_rows import all_policies, commit_instant
from .scope import ReadScope, entity_clause, literal


def contests(scope: ReadScope, window_seconds: int, *, entities: tuple[str, ...] = (), entity_type: str | None = None,
             scopes: tuple[str, ...] = (), as_of: str | None = None) -> list[dict[str, Any]]:
    """Every contest of the entities asked about (all by default; `entities` as their survivors,
    `entity_type`, and those a visible observation in one of `scopes` is about), by entity id, then field."""
    from ..index.sqlcontest import CANDIDATES, contests_all

    special = scope.special()
    merges = merge_map(special, retracted_ids(special))
    where, params = "o.entity IS NOT NULL", list[Any]()
    wanted: list[str] = []
    wanted_params: list[Any] = []
    if entities:
        survivors = sorted({survivor(e, merges) for e in entities})
        family = sorted({e for e in merges if survivor(e, merges) in survivors} | set(survivors))
        where, params = entity_clause(family)
        wanted.append("eid IN (SELECT unnest(?::VARCHAR[]))")
        wanted_params.append(survivors)
    if entity_type is not None:
        wanted.append(f"split_part(eid, '/', 1) = {literal(entity_type)}")
    if scopes:
        about = scope.rows("SELECT DISTINCT o.entity FROM visible AS o WHERE o.entity IS NOT NULL "
                           "AND list_has_any(o.scope, ?::VARCHAR[])", [list(scopes)])
        wanted.append("eid IN (SELECT unnest(?::VARCHAR[]))")
        wanted_params.append(sorted({survivor(e, merges) for (e,) in about}))
    return contests_all(scope.con, CANDIDATES.format(relation="visible", where=where), params, special,
                        all_policies(scope.git, scope.at_commit), window_seconds, as_of=as_of,
                        valid_at=commit_instant(scope.git, scope.at_commit),
                        wanted=" AND ".join(wanted) or "TRUE", wanted_params=wanted_params)


def page(scope: ReadScope, window_seconds: int, *, limit: int, offset: int, as_of: str | None = None,
         **filters: Any) -> dict[str, Any]:
    """`{at_commit, valid_at, window_seconds, contests, total, limit, offset}` (§19)."""
    found = contests(scope, window_seconds, as_of=as_of, **filters)
    return {"at_commit": scope.at_commit, "valid_at": as_of or commit_instant(scope.git, scope.at_commit),
            "window_seconds": window_seconds, "contests": found[offset:offset + limit], "total": len(found),
            "limit": limit, "offset": offset}

