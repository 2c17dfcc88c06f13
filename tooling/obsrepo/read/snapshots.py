"""Entity snapshots and provenance from the index: candidates in SQL, reduction in `reduce`.

Every function reads through a `ReadScope`: the rows are already those of its commit and
tenant binding."""

from __future__ import annotations

import json
from datetime import timezone
from typing import Any

from ..errors import NotFoundError
from ..format.contested import DEFAULT_WINDOW, contested_map, entity_contests, parse_window
from ..format.reduce import merge_map, reduce_entity, retracted_ids, survivor
from ..index.reducer_rows import CANDIDATES, PLAIN_ROW, all_policies, commit_instant, load_policies, plain_obs
from ..times import format_timestamp
from .scope import ReadScope, entity_clause


def all_snapshots(scope: ReadScope) -> dict[str, dict[str, Any]]:
    """Every entity's snapshot at the scope's commit, reduced in SQL (`sqlreduce`)."""
    from ..index.sqlreduce import reduce_all

    return reduce_all(scope.con, CANDIDATES.format(relation="visible", where="TRUE"), [], scope.special(),
                      all_policies(scope.git, scope.at_commit), at_commit=scope.at_commit,
                      valid_at=commit_instant(scope.git, scope.at_commit))


def snapshot(scope: ReadScope, entity: str, as_of: str | None = None, explain: bool = False) -> dict[str, Any]:
    """The entity's snapshot; a scope shared by several reads keeps it, so the questions of a
    page (its snapshot, its neighbourhood's start, its timeline) or of a preview's pages reduce
    a busy entity once. An explained snapshot is the plain one with `explain` added."""
    if scope.answers is None:
        return _reduce(scope, entity, as_of, explain)
    key = ("snapshot", entity, as_of, *scope.view_key())
    kept = scope.answers.get(key)
    if kept is None or (explain and "explain" not in kept):
        kept = scope.answers[key] = _reduce(scope, entity, as_of, explain)
    return kept if explain else {name: value for name, value in kept.items() if name != "explain"}


def _reduce(scope: ReadScope, entity: str, as_of: str | None, explain: bool) -> dict[str, Any]:
    # merges and retractions are few: read them all, then only the entities that matter
    special_obs = scope.special()
    merges = merge_map(special_obs, retracted_ids(special_obs))
    target = survivor(entity, merges)
    if scope.as_indexed and as_of is None and not explain:
        stored = _stored(scope, entity, target)
        if stored is not None:
            return stored
    family = sorted({e for e in merges if survivor(e, merges) == target} | {target, entity})
    # the special rows first, whole (a retraction's target among them, with its tenant); then
    # the family's ordinary rows, only the columns the reducer reads of those
    observations = {o.id: o for o in special_obs}
    clause, params = entity_clause(family)
    rows = scope.rows(f"SELECT {PLAIN_ROW} FROM visible AS o WHERE {clause} AND NOT o.special", params)
    for obs in plain_obs(rows):
        observations.setdefault(obs.id, obs)
    if not any(o.entity in family for o in observations.values()) and not _ever_known(scope, entity):
        raise NotFoundError(f"entity '{entity}' does not exist", code="ENTITY_NOT_FOUND", entity=entity)
    policies = load_policies(scope.git, scope.at_commit, target.split("/", 1)[0])
    valid_at = commit_instant(scope.git, scope.at_commit)
    result = reduce_entity(entity, observations.values(), policies, as_of=as_of, at_commit=scope.at_commit,
                           explain=explain, valid_at=valid_at)
    # the fields two sources dispute (docs/design.md §19, the default window), from the same candidates
    result["contested"] = contested_map(entity_contests(entity, observations.values(), policies,
                                                        parse_window(DEFAULT_WINDOW), as_of=as_of, valid_at=valid_at))
    return result


def _stored(scope: ReadScope, entity: str, target: str) -> dict[str, Any] | None:
    """The snapshot the index reduced when it was built (`entity_snapshots`, the same reducer in
    SQL), for a scope that reads exactly the rows it was reduced over: a busy entity's thousands
    of observations are not read and reduced again. None when the table has no row for it."""
    row = scope.one("SELECT snapshot, provenance, observation_count, last_observation_at, deleted FROM entity_snapshots "
                    "WHERE entity_id = ?", [target])
    if row is None:
        return None
    snap, provenance, count, last, deleted = row
    moment = None if last is None else format_timestamp(last.replace(tzinfo=timezone.utc))
    result = {"entity_id": target, "entity_type": target.split("/", 1)[0], "snapshot": json.loads(snap),
              "provenance": json.loads(provenance), "observation_count": count, "last_observation_at": moment,
              "computed_at": moment, "at_commit": scope.at_commit,
              "valid_at": commit_instant(scope.git, scope.at_commit), "deleted": deleted}
    if target != entity:
        result["merged_from"] = entity
    contested: dict[str, list[str]] = {}
    for field, challenger in scope.rows("SELECT field, challenger_observation_id FROM contested_fields "
                                        "WHERE entity_id = ? ORDER BY rowid", [target]):
        contested.setdefault(field, []).append(challenger)
    result["contested"] = contested
    return result


def _ever_known(scope: ReadScope, entity: str) -> bool:
    clause, params = entity_clause([entity])
    return scope.one(f"SELECT 1 FROM obs_versions AS o WHERE {clause} LIMIT 1", params) is not None


def provenance(scope: ReadScope, entity: str, field: str) -> dict[str, Any]:
    snap = snapshot(scope, entity)
    if field not in snap["snapshot"]:
        raise NotFoundError(f"entity '{snap['entity_id']}' has no field '{field}'", code="FIELD_NOT_FOUND",
                            entity=snap["entity_id"], field=field)
    winner = snap["provenance"][field]
    first = winner[0] if isinstance(winner, list) else winner
    row = scope.one(
        "SELECT o.path, o.\"commit\", o.author, strftime(o.committed_at, '%Y-%m-%dT%H:%M:%SZ'), o.source_ref, "
        "o.interpretation FROM visible AS o WHERE o.id = ?", [first])
    assert row is not None  # the winner is a visible row
    path, commit, author, committed_at, source_ref, interpretation = row
    policies = load_policies(scope.git, scope.at_commit, snap["entity_type"])
    return {
        "entity_id": snap["entity_id"], "field": field, "value": snap["snapshot"][field], "observation_id": winner,
        "path": path, "commit": commit, "author": author, "committed_at": committed_at, "source_ref": source_ref,
        "interpretation": interpretation, "policy": policies.get(field, "highest_priority"),
    }
