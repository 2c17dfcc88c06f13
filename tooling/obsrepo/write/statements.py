"""The front matter of stewardship statements (docs/design.md §11): a correction, a retraction,
a relation, a merge. Each is an ordinary new observation; nothing is ever edited."""

from __future__ import annotations

from typing import Any

from ..errors import InputError, NotFoundError
from ..gate.addition import RuleState
from ..gate.graph import visible

CORRECTION_PRIORITY = 1000


def stamp_tenant(front: dict[str, Any], binding: dict[str, str]) -> dict[str, Any]:
    """The writer's tenant binding written into the observation; a front matter that names
    another tenant is refused (a bound writer cannot write for someone else)."""
    if not binding:
        return front
    given = front.get("tenant")
    merged: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    if given is not None and not isinstance(given, dict):
        raise InputError("tenant must be a mapping of org, project, agent, user", parameter="tenant")
    for key, value in binding.items():
        if key in merged and merged[key] != value:
            raise InputError(f"tenant {key}={merged[key]!s} conflicts with this writer's binding {key}={value}",
                             parameter="tenant")
        merged[key] = value
    return {**front, "tenant": merged}


def _with_tenant(front: dict[str, Any], tenant: dict[str, str] | None) -> dict[str, Any]:
    return {**front, "tenant": dict(tenant)} if tenant else front


def target_tenant(state: RuleState, obs_id: str, binding: dict[str, str]) -> dict[str, str]:
    """The tenant of observation `obs_id`; REF_NOT_FOUND when it does not exist or the binding
    cannot see it (an invisible id reads exactly like a missing one)."""
    facts = state.by_id.get(obs_id)
    if facts is None or not visible(facts["tenant"], binding):
        raise NotFoundError(f"observation '{obs_id}' does not exist", code="REF_NOT_FOUND", id=obs_id)
    return dict(facts["tenant"])


def correction(entity: str, field: str, value: Any, winner: str, tenant: dict[str, str], *, reason: str,
               source: str) -> dict[str, Any]:
    """A priority-1000 observation that corrects the field's winning observation (in its tenant:
    a correction names an observation of its own tenant)."""
    return _with_tenant({
        "source": source, "event": f"Correct {field} of {entity}: {reason}", "type": "correction",
        "entity": entity, "fields": {field: value}, "priority": CORRECTION_PRIORITY, "corrects": [winner],
    }, tenant)


def retraction(obs_id: str, tenant: dict[str, str], *, reason: str, source: str) -> dict[str, Any]:
    return _with_tenant({"source": source, "event": f"Retract {obs_id}: {reason}", "type": "retraction",
                         "retracts": [obs_id]}, tenant)


def relation(source_entity: str, relation_type: str, target: str, *, source: str) -> dict[str, Any]:
    return {"source": source, "event": f"Relate {source_entity} {relation_type} {target}", "type": "relation",
            "entity": source_entity, "relations": [{"type": relation_type, "target": target}]}


def merge(from_entity: str, into_entity: str, *, reason: str, source: str) -> dict[str, Any]:
    return {"source": source, "event": f"Merge {from_entity} into {into_entity}: {reason}", "type": "merge",
            "entity": from_entity, "relations": [{"type": "DUPLICATE_OF", "target": into_entity}]}
