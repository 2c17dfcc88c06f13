"""The reducer of docs/design.md §4, in plain Python: the reference every other implementation must equal.

Input: the observations visible at a commit (already bound to the caller's tenant), as
`Obs` values. Output: a JSON-ready snapshot that depends only on the set of inputs, never on
their order. Nothing here does I/O.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
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


@functools.lru_cache(maxsize=1 << 16)
def _desc(text: str) -> tuple[int, ...]:
    """A key that sorts strings in descending order (for mixed ASC/DESC sort keys); cached, as
    the same timestamps come back for every field of every candidate."""
    return tuple(-b for b in text.encode("utf-8")) + (1,)


def order_key(policy: str, obs: Obs) -> tuple:
    """Ascending sort key: the first element is the winner under `policy`."""
    ts = _desc(_instant(obs.timestamp))
    if policy == "last_write":
        return (ts, obs.id)
    if policy == "most_specific":
        return (-obs.specificity, -obs.priority, ts, obs.id)
    return (-obs.priority, -obs.specificity, ts, obs.id)


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


@dataclass
class Candidate:
    field: str
    value: Any
    observation: Obs
    decided_by: str


def reduce_entity(entity: str, observations: Iterable[Obs], policies: dict[str, str] | None = None,
                  as_of: str | None = None, at_commit: str | None = None, explain: bool = False) -> dict[str, Any]:
    """The snapshot of `entity` from the visible observations (docs/design.md §4)."""
    policies = policies or {}
    every = list(observations)
    gone = retracted_ids(every)
    merges = merge_map(every, gone)
    target = survivor(entity, merges)
    limit = _instant(as_of) if as_of else None
    candidates = [
        o for o in every
        if o.entity is not None and o.id not in gone and survivor(o.entity, merges) == target
        and (limit is None or _instant(o.timestamp) <= limit)
    ]
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
    result["deleted"] = False
    if target != entity:
        result["merged_from"] = entity
    explanation: dict[str, list[dict[str, Any]]] = {}

    # the deletion gate ranks by (priority DESC, timestamp DESC, id ASC): specificity plays no part
    deleting = sorted((o for o in candidates if "_deleted" in o.fields),
                      key=lambda o: (-o.priority, _desc(_instant(o.timestamp)), o.id))
    if deleting and deleting[0].fields["_deleted"] is True:
        result["deleted"] = True
        if explain:
            result["explain"] = {"_deleted": [_line(o, "_deleted", o.fields["_deleted"], i == 0, "deletion gate")
                                              for i, o in enumerate(deleting)]}
        return result

    names = sorted({name for o in candidates for name in o.fields if name != "_deleted"})
    for name in names:
        policy = policies.get(name, "highest_priority")
        carriers = [o for o in candidates if name in o.fields]
        value, provenance, ranked, rule = _field(name, policy, carriers)
        if value is not _ABSENT:
            result["snapshot"][name] = value
            result["provenance"][name] = provenance
        if explain:
            winners = set(provenance) if isinstance(provenance, list) else {provenance}
            explanation[name] = [_line(o, name, o.fields[name], o.id in winners, rule) for o in ranked]
    if explain:
        result["explain"] = explanation
    return result


def _field(name: str, policy: str, carriers: list[Obs]) -> tuple[Any, Any, list[Obs], str]:
    corrections = [o for o in carriers if o.priority >= CORRECTION_PRIORITY]
    if corrections:
        ordered = sorted(corrections, key=lambda o: order_key(policy if policy != "merge_array" else "highest_priority", o))
        top = ordered[0]
        rest = sorted((o for o in carriers if o.priority < CORRECTION_PRIORITY), key=lambda o: order_key("highest_priority", o))
        value = top.fields[name]
        if value is None:
            value = [] if policy == "merge_array" else _ABSENT
        provenance = [top.id] if policy == "merge_array" else top.id
        return value, provenance, ordered + rest, "correction beats every non-correction"
    if policy == "merge_array":
        ordered = sorted(carriers, key=lambda o: order_key("highest_priority", o))
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
    ordered = sorted(carriers, key=lambda o: order_key(policy, o))
    top = ordered[0]
    value = top.fields[name]
    rule = {"last_write": "last_write: newest timestamp, then id",
            "most_specific": "most_specific: specificity, priority, timestamp, id"}.get(
        policy, "highest_priority: priority, specificity, timestamp, id")
    return (_ABSENT if value is None else value), top.id, ordered, rule


def _line(obs: Obs, name: str, value: Any, won: bool, rule: str) -> dict[str, Any]:
    return {"observation_id": obs.id, "value": value, "priority": obs.priority, "specificity": obs.specificity,
            "timestamp": obs.timestamp, "won": won, "rule": rule}
