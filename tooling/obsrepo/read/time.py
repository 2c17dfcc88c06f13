"""Valid time over the index (docs/design.md §19): an entity's field intervals.

Reads through a `ReadScope`: the rows are already those of its commit and tenant binding, so a
period that only another tenant's observation makes does not exist for a bound caller."""

from __future__ import annotations

from typing import Any

from ..errors import NotFoundError
from ..format.intervals import field_intervals
from ..format.reduce import Obs, merge_map, retracted_ids, survivor
from ..index.reducer_rows import PLAIN_ROW, load_policies, plain_obs
from .scope import ReadScope, entity_clause


def family_observations(scope: ReadScope, entity: str) -> tuple[str, list[Obs]]:
    """The surviving entity and every observation the reducer may read for it: the special rows
    whole, then the ordinary rows of the entity and of those merged into it. ENTITY_NOT_FOUND when
    none of them is about it."""
    special = scope.special()
    merges = merge_map(special, retracted_ids(special))
    target = survivor(entity, merges)
    family = sorted({e for e in merges if survivor(e, merges) == target} | {target, entity})
    observations = {o.id: o for o in special}
    clause, params = entity_clause(family)
    for obs in plain_obs(scope.rows(f"SELECT {PLAIN_ROW} FROM visible AS o WHERE {clause} AND NOT o.special", params)):
        observations.setdefault(obs.id, obs)
    if not any(o.entity in family for o in observations.values()):
        raise NotFoundError(f"entity '{entity}' does not exist", code="ENTITY_NOT_FOUND", entity=entity)
    return target, sorted(observations.values(), key=lambda o: o.id)


def intervals(scope: ReadScope, entity: str, fields: tuple[str, ...] = ()) -> dict[str, Any]:
    """`{entity_id, at_commit, fields: [{field, intervals: [{from, until, value, observation_id,
    commit, rule}]}]}` by field, then `from` (§19); `until: null` is open."""
    target, observations = family_observations(scope, entity)
    return _answer(scope, entity, target, observations, fields)


def periods(scope: ReadScope, entity: str) -> dict[str, Any] | None:
    """`intervals` of the entity when one of its candidates (its own observations and those of the
    entities merged into it, within the binding) wrote `valid`; None when none did."""
    target, observations = family_observations(scope, entity)
    gone = retracted_ids(observations)
    merges = merge_map(observations, gone)
    if not any(o.entity is not None and o.id not in gone and (o.valid_from or o.valid_until)
               and survivor(o.entity, merges) == target for o in observations):
        return None
    return _answer(scope, entity, target, observations, ())


def _answer(scope: ReadScope, entity: str, target: str, observations: list[Obs],
            fields: tuple[str, ...]) -> dict[str, Any]:
    policies = load_policies(scope.git, scope.at_commit, target.split("/", 1)[0])
    answer = field_intervals(entity, observations, policies, fields or None)
    winners = sorted({i for f in answer["fields"] for span in f["intervals"]
                      for i in (span["observation_id"] if isinstance(span["observation_id"], list)
                                else [span["observation_id"]])})
    commits = dict(scope.rows('SELECT o.id, o."commit" FROM visible AS o WHERE o.id IN (SELECT unnest(?::VARCHAR[]))',
                              [winners])) if winners else {}
    for f in answer["fields"]:
        for span in f["intervals"]:
            first = span["observation_id"][0] if isinstance(span["observation_id"], list) else span["observation_id"]
            span["commit"] = commits.get(first)
        f["intervals"] = [{key: span[key] for key in ("from", "until", "value", "observation_id", "commit", "rule")}
                          for span in f["intervals"]]
    return {"entity_id": answer["entity_id"], "at_commit": scope.at_commit, "fields": answer["fields"]}
