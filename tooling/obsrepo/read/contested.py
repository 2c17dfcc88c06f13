"""Contested values over the index (docs/design.md §19): every contest at a commit and a valid
time, and one entity's.

Reads through a `ReadScope`: the rows are already those of its commit and tenant binding, so a
contest that only another tenant's observation makes does not exist for a bound caller."""

from __future__ import annotations

import json
from typing import Any

from ..format.contested import DEFAULT_WINDOW, decided_by, parse_window, side
from ..format.reduce import Obs, merge_map, retracted_ids, survivor
from ..index.reducer_rows import INSTANT, all_policies, commit_instant, instant, load_policies
from .scope import ReadScope, entity_clause


def contests(scope: ReadScope, window_seconds: int, *, entities: tuple[str, ...] = (), entity_type: str | None = None,
             scopes: tuple[str, ...] = (), as_of: str | None = None) -> list[dict[str, Any]]:
    """Every contest of the entities asked about (all by default; `entities` as their survivors,
    `entity_type`, and those a visible observation in one of `scopes` is about), by entity id, then field."""
    from ..index.sqlcontest import CANDIDATES, contests_all

    special = scope.special()
    merges = merge_map(special, retracted_ids(special))
    where, params = "o.entity IS NOT NULL", list[Any]()
    if entities:
        survivors = {survivor(e, merges) for e in entities}
        where, params = entity_clause(sorted({e for e in merges if survivor(e, merges) in survivors} | survivors))
    wanted, wanted_params = _asked(scope, merges, "eid", entities, entity_type, scopes)
    return contests_all(scope.con, CANDIDATES.format(relation="visible", where=where), params, special,
                        all_policies(scope.git, scope.at_commit), window_seconds, as_of=as_of,
                        valid_at=commit_instant(scope.git, scope.at_commit),
                        wanted=" AND ".join(wanted) or "TRUE", wanted_params=wanted_params)


def page(scope: ReadScope, window_seconds: int, *, limit: int, offset: int, as_of: str | None = None,
         **filters: Any) -> dict[str, Any]:
    """`{at_commit, valid_at, window_seconds, contests, total, limit, offset}` (§19): from the
    index's `contested_fields` where it holds exactly this question (the indexed commit, every
    tenant, nothing withheld, no --as-of, the default window), else computed (`contests`)."""
    if scope.as_indexed and as_of is None and window_seconds == parse_window(DEFAULT_WINDOW):
        total, found = _stored(scope, limit, offset, **filters)
    else:
        every = contests(scope, window_seconds, as_of=as_of, **filters)
        total, found = len(every), every[offset:offset + limit]
    return {"at_commit": scope.at_commit, "valid_at": as_of or commit_instant(scope.git, scope.at_commit),
            "window_seconds": window_seconds, "contests": found, "total": total, "limit": limit, "offset": offset}


def _stored(scope: ReadScope, limit: int, offset: int, *, entities: tuple[str, ...] = (),
            entity_type: str | None = None, scopes: tuple[str, ...] = ()) -> tuple[int, list[dict[str, Any]]]:
    """The page's contests as the index built them: its rows of `contested_fields`, then only
    the winners' and challengers' observations of that page, read by id."""
    special = scope.special()
    merges = merge_map(special, retracted_ids(special))
    clauses, params = _asked(scope, merges, "entity_id", entities, entity_type, scopes)
    where = " AND ".join(clauses) or "TRUE"
    keys = f"SELECT DISTINCT entity_id, field FROM contested_fields WHERE {where}"
    total = scope.one(f"SELECT count(*) FROM ({keys})", params)[0]
    rows = scope.rows(f"SELECT f.entity_id, f.field, f.winner_observation_id, f.challenger_observation_id "
                      f"FROM contested_fields AS f SEMI JOIN (SELECT * FROM ({keys}) ORDER BY entity_id, field "
                      f"LIMIT {int(limit)} OFFSET {int(offset)}) AS k ON k.entity_id = f.entity_id AND k.field = f.field "
                      "ORDER BY f.rowid", params)
    ids = sorted({i for row in rows for i in row[2:]})
    sides: dict[str, Obs] = {}
    if ids:
        for obs_id, ts, fields, priority, specificity, source, start in scope.rows(
                f"SELECT o.id, {INSTANT}, o.fields, o.priority, o.specificity, o.source, {instant('o.valid_from')} "
                "FROM visible AS o WHERE o.id IN (SELECT unnest(?::VARCHAR[]))", [ids]):
            sides[obs_id] = Obs(id=obs_id, timestamp=ts, entity=None, fields=json.loads(fields), priority=priority,
                                specificity=specificity, source=source, valid_from=start)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for entity, field, winner, challenger in rows:
        if (entity, field) not in found:
            policy = load_policies(scope.git, scope.at_commit, entity.split("/", 1)[0]).get(field, "highest_priority")
            found[(entity, field)] = {"entity_id": entity, "field": field, "policy": policy,
                                      "decided_by": decided_by(policy, sides[winner], sides[challenger]),
                                      "winner": side(field, sides[winner]), "challengers": []}
        found[(entity, field)]["challengers"].append(side(field, sides[challenger]))
    return total, sorted(found.values(), key=lambda c: (c["entity_id"], c["field"]))



def of_entities(scope: ReadScope, entities: list[str], as_of: str | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    """(entity, field) → its contest, for these surviving entities (the default window, at
    `as_of` or else the commit's time): from the index's table where it holds exactly this
    scope's rows and no `as_of`."""
    if not entities:
        return {}
    if scope.as_indexed and as_of is None:
        _total, found = _stored(scope, 1 << 30, 0, entities=tuple(entities))
    else:
        found = contests(scope, parse_window(DEFAULT_WINDOW), entities=tuple(entities), as_of=as_of)
    return {(c["entity_id"], c["field"]): c for c in found}


def _asked(scope: ReadScope, merges: dict[str, str], column: str, entities: tuple[str, ...], entity_type: str | None,
           scopes: tuple[str, ...]) -> tuple[list[str], list[Any]]:
    """The clauses (and their parameters) on `column`, an entity's survivor, that keep the
    entities asked for: named (by any name merged into them), of a type, or about a scope by a
    visible observation."""
    clauses: list[str] = []
    params: list[Any] = []
    if entities:
        clauses.append(f"{column} IN (SELECT unnest(?::VARCHAR[]))")
        params.append(sorted({survivor(e, merges) for e in entities}))
    if entity_type is not None:
        clauses.append(f"split_part({column}, '/', 1) = ?")  # a parameter: any text, NUL included, is just a type
        params.append(entity_type)
    if scopes:
        about = scope.rows("SELECT DISTINCT o.entity FROM visible AS o WHERE o.entity IS NOT NULL "
                           "AND list_has_any(o.scope, ?::VARCHAR[])", [list(scopes)])
        clauses.append(f"{column} IN (SELECT unnest(?::VARCHAR[]))")
        params.append(sorted({survivor(e, merges) for (e,) in about}))
    return clauses, params
