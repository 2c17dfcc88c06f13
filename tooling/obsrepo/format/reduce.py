"""The reducer of docs/design.md §4, in plain Python: the reference every other implementation must equal.

Input: the observations visible at a commit (already bound to the caller's tenant), as
`Obs` values. Output: a JSON-ready snapshot that depends only on the set of inputs, never on
their order. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .vocabulary import CORRECTION_PRIORITY, POLICIES  # noqa: F401 - POLICIES re-exported

_ABSENT = object()


@dataclass(frozen=True)
class Obs:
    id: str
    timestamp: str  # canonical UTC text (`format_timestamp`): sorts like the instant
    entity: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    priority: int = 100
    specificity: float = 0.0
    retracts: tuple[str, ...] = ()
    relations: tuple[tuple[str, str], ...] = ()
    tenant: tuple[tuple[str, str], ...] = ()
    # the period of valid time written (`valid`, docs/design.md §19), canonical UTC text; None: not written
    valid_from: str | None = None
    valid_until: str | None = None
    source: str = ""  # who observed: the reducer never reads it; a contest needs two (§19)


def holds(obs: Obs, instant: str) -> bool:
    """Whether `instant` (canonical UTC text) lies in the observation's effective interval:
    `[from, until)`, `from` defaulting to its timestamp, `until` to open."""
    moment = _instant(instant)
    if _instant(obs.valid_from or obs.timestamp) > moment:
        return False
    return obs.valid_until is None or _instant(obs.valid_until) > moment


def counts(obs: Obs, as_of: str | None, valid_at: str | None) -> bool:
    """Whether an observation is a candidate (docs/design.md §19): with `as_of`, when its effective
    interval holds it; without, one that wrote no period always, one that did when its interval
    holds `valid_at` (the committer time of the commit asked about; None: every one counts)."""
    if as_of is not None:
        return holds(obs, as_of)
    if valid_at is None or (obs.valid_from is None and obs.valid_until is None):
        return True
    return holds(obs, valid_at)


def rank(policy: str, observations: Iterable[Obs]) -> list[Obs]:
    """The observations in `policy`'s order, the winner first:
    highest_priority: priority, specificity, timestamp (each descending), then id ascending;
    most_specific: specificity, priority, timestamp, id; last_write: timestamp, id.
    Two stable sorts (id ascending, then the rest descending) give that order without building
    a descending key for text."""
    ordered = sorted(observations, key=lambda o: o.id)
    if policy == "last_write":
        ordered.sort(key=lambda o: _instant(o.timestamp), reverse=True)
    elif policy == "most_specific":
        ordered.sort(key=lambda o: (o.specificity, o.priority, _instant(o.timestamp)), reverse=True)
    else:
        ordered.sort(key=lambda o: (o.priority, o.specificity, _instant(o.timestamp)), reverse=True)
    return ordered


def _instant(timestamp: str) -> str:
    """Fixed-width text that sorts like the instant (microseconds made explicit)."""
    base = timestamp.rstrip("Z")
    if "." not in base:
        base += ".000000"
    return base.ljust(26, "0")


def retracted_ids(observations: Iterable[Obs]) -> set[str]:
    """Ids withdrawn by a retraction of the same tenant mapping."""
    tenant_of = {o.id: o.tenant for o in observations}
    gone = set()
    for obs in observations:
        for target in obs.retracts:
            if target in tenant_of and tenant_of[target] == obs.tenant:
                gone.add(target)
    return gone


def merge_map(observations: Iterable[Obs], retracted: set[str]) -> dict[str, str]:
    """entity → the entity it was merged into (DUPLICATE_OF), the first merge by (timestamp, id)."""
    merges: dict[str, tuple[str, str, str]] = {}
    for obs in observations:
        if obs.id in retracted or obs.entity is None:
            continue
        for kind, target in obs.relations:
            if kind == "DUPLICATE_OF":
                key = (_instant(obs.timestamp), obs.id, target)
                if obs.entity not in merges or key < merges[obs.entity]:
                    merges[obs.entity] = key
    return {source: key[2] for source, key in merges.items()}


def survivor(entity: str, merges: dict[str, str]) -> str:
    """Follow merges to the entity that survives (a cycle stops where it would repeat)."""
    seen = {entity}
    while entity in merges and merges[entity] not in seen:
        entity = merges[entity]
        seen.add(entity)
    return entity


def candidates_of(entity: str, observations: Iterable[Obs], as_of: str | None = None,
                  valid_at: str | None = None) -> tuple[str, list[Obs]]:
    """The entity that survives `entity`'s merges, and the candidates of §4 step 1 (with §19's
    rule of which observations count): of it or merged into it, not retracted, counting then."""
    every = list(observations)
    gone = retracted_ids(every)
    merges = merge_map(every, gone)
    target = survivor(entity, merges)
    return target, [o for o in every if o.entity is not None and o.id not in gone
                    and survivor(o.entity, merges) == target and counts(o, as_of, valid_at)]


def deletion_order(candidates: Iterable[Obs]) -> list[Obs]:
    """The candidates that carry `_deleted`, in the deletion gate's order: (priority DESC,
    timestamp DESC, id ASC); specificity plays no part. The entity is deleted when the first says true."""
    deleting = sorted((o for o in candidates if "_deleted" in o.fields), key=lambda o: o.id)
    deleting.sort(key=lambda o: (o.priority, _instant(o.timestamp)), reverse=True)
    return deleting


@dataclass
class Candidate:
    field: str
    value: Any
    observation: Obs
    decided_by: str


def reduce_entity(entity: str, observations: Iterable[Obs], policies: dict[str, str] | None = None,
                  as_of: str | None = None, at_commit: str | None = None, explain: bool = False,
                  valid_at: str | None = None) -> dict[str, Any]:
    """The snapshot of `entity` from the visible observations (docs/design.md §4), with the
    candidates of valid time `as_of`, else of the commit's time `valid_at` (§19)."""
    policies = policies or {}
    target, candidates = candidates_of(entity, observations, as_of, valid_at)
    result: dict[str, Any] = {
        "entity_id": target,
        "entity_type": target.split("/", 1)[0],
        "snapshot": {},
        "provenance": {},
        "observation_count": len(candidates),
        "last_observation_at": max((o.timestamp for o in candidates), key=_instant, default=None),
    }
    result["computed_at"] = result["last_observation_at"]
    result["at_commit"] = at_commit
    result["valid_at"] = as_of or valid_at
    result["deleted"] = False
    if target != entity:
        result["merged_from"] = entity
    explanation: dict[str, list[dict[str, Any]]] = {}

    deleting = deletion_order(candidates)
    if deleting and deleting[0].fields["_deleted"] is True:
        result["deleted"] = True
        if explain:
            result["explain"] = {"_deleted": [_line(o, "_deleted", o.fields["_deleted"], i == 0, "deletion gate")
                                              for i, o in enumerate(deleting)]}
        return result

    names = sorted({name for o in candidates for name in o.fields if name != "_deleted"})
    rankings: dict[str, list[Obs]] = {}

    def ranked_by(policy: str) -> list[Obs]:
        """Every candidate in `policy`'s order, sorted once: the keys are total (ids are unique),
        so a field's carriers filtered from it are in the order sorting them would give."""
        if policy not in rankings:
            rankings[policy] = rank(policy, candidates)
        return rankings[policy]

    for name in names:
        policy = policies.get(name, "highest_priority")
        value, provenance, ranked, rule = _field(name, policy, ranked_by)
        if value is not _ABSENT:
            result["snapshot"][name] = value
            result["provenance"][name] = provenance
        if explain:
            winners = set(provenance) if isinstance(provenance, list) else {provenance}
            explanation[name] = [_line(o, name, o.fields[name], o.id in winners, rule) for o in ranked]
    if explain:
        result["explain"] = explanation
    return result


def _field(name: str, policy: str, ranked_by: Callable[[str], list[Obs]]) -> tuple[Any, Any, list[Obs], str]:
    def carriers(order: str) -> list[Obs]:
        return [o for o in ranked_by(order) if name in o.fields]

    ranked = carriers("highest_priority" if policy == "merge_array" else policy)
    corrections = [o for o in ranked if o.priority >= CORRECTION_PRIORITY]
    if corrections:
        ordered = corrections
        top = ordered[0]
        rest = [o for o in (ranked if policy in ("highest_priority", "merge_array") else carriers("highest_priority"))
                if o.priority < CORRECTION_PRIORITY]
        value = top.fields[name]
        if value is None:
            value = [] if policy == "merge_array" else _ABSENT
        provenance = [top.id] if policy == "merge_array" else top.id
        return value, provenance, ordered + rest, "correction beats every non-correction"
    if policy == "merge_array":
        ordered = ranked
        top = ordered[0]
        if top.fields[name] is None:
            return [], [top.id], ordered, "merge_array: a winning null clears"
        level = [o for o in ordered if o.priority == top.priority and o.fields[name] is not None]
        merged: list[Any] = []
        seen: set[str] = set()
        contributors: list[str] = []
        for obs in level:
            values = obs.fields[name] if isinstance(obs.fields[name], list) else [obs.fields[name]]
            contributors.append(obs.id)
            for item in values:
                key = json.dumps(item, ensure_ascii=False, separators=(",", ":"))  # equal as written JSON
                if key not in seen:
                    seen.add(key)
                    merged.append(item)
        return merged, contributors, ordered, f"merge_array: union at priority {top.priority}"
    ordered = ranked
    top = ordered[0]
    value = top.fields[name]
    rule = {"last_write": "last_write: newest timestamp, then id",
            "most_specific": "most_specific: specificity, priority, timestamp, id"}.get(
        policy, "highest_priority: priority, specificity, timestamp, id")
    return (_ABSENT if value is None else value), top.id, ordered, rule


def _line(obs: Obs, name: str, value: Any, won: bool, rule: str) -> dict[str, Any]:
    return {"observation_id": obs.id, "value": value, "priority": obs.priority, "specificity": obs.specificity,
            "timestamp": obs.timestamp, "won": won, "rule": rule}
