"""The front matter of stewardship statements (docs/design.md §11, §14): a correction, a
retraction, a relation, a merge, feedback on an observation, a reclassification. Each is an
ordinary new observation; nothing is ever edited."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from .. import errors
from ..errors import InputError, NotFoundError, UsageError
from ..format.report import NOT_WRITTEN, Issue
from ..format.vocabulary import CLASSIFICATIONS, CORRECTION_PRIORITY, FEEDBACK_OUTCOMES
from ..gate.graph import visible
from ..gate.near import NearState
from ..times import format_timestamp, parse_timestamp
from .new import DocumentRefused


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


def target_tenant(state: NearState, obs_id: str, binding: dict[str, str]) -> dict[str, str]:
    """The tenant of observation `obs_id`; REF_NOT_FOUND when it does not exist or the binding
    cannot see it (an invisible id reads exactly like a missing one)."""
    facts = state.by_id.get(obs_id)
    if facts is None or not visible(facts["tenant"], binding):
        raise NotFoundError(f"observation '{obs_id}' does not exist", code="REF_NOT_FOUND", id=obs_id)
    return dict(facts["tenant"])


def said(reason: str) -> str:
    """A statement's reason, which its event carries: blank is no reason (USAGE_ERROR naming
    `reason`), as every adapter's declaration says (at least one character)."""
    if not reason.strip():
        raise UsageError("reason must say why (it is empty)", parameter="reason")
    return reason


def correction(entity: str, field: str, value: Any, winner: str, tenant: dict[str, str], *, reason: str,
               source: str, winner_timestamp: str | None = None, now: datetime | None = None) -> dict[str, Any]:
    """A priority-1000 observation that corrects the field's winning observation (in its tenant:
    a correction names an observation of its own tenant). Corrections rank among themselves by
    timestamp (docs/design.md §4), and written timestamps are whole seconds: so a correction is
    stamped at least one second after the winner it corrects (a second correction made within
    the same second as the first, or over a winner dated in the future, still wins)."""
    front: dict[str, Any] = {
        "source": source, "event": f"Correct {field} of {entity}: {said(reason)}", "type": "correction",
        "entity": entity, "fields": {field: value}, "priority": CORRECTION_PRIORITY, "corrects": [winner],
    }
    stamp = (now or datetime.now(timezone.utc)).replace(microsecond=0)
    if winner_timestamp is not None:
        after = parse_timestamp(winner_timestamp).replace(microsecond=0) + timedelta(seconds=1)
        if after > stamp and after.year <= 9999:
            stamp = after
    front["timestamp"] = format_timestamp(stamp)
    return _with_tenant(front, tenant)


def json_type(value: Any) -> str:
    """The JSON type of a value as a document holds it; integers and floats are both "number"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return "string" if isinstance(value, str) else "array" if isinstance(value, list) else "object"


def refuse_type_change(entity: str, field: str, current: Any, value: Any) -> None:
    """A correction keeps the field's JSON type (docs/design.md §8a, rule `type-change`): a
    client that sends the number 333 as the text "333" is refused instead of turning a number
    into a string for every reader. `null` clears a field and is never a type change."""
    now, wanted = json_type(current), json_type(value)
    if now == wanted or "null" in (now, wanted):
        return
    message = (f"{field} of {entity} is {_a(now)} and the correction's value is {_a(wanted)}; give {_a(now)}, "
               "or allow the change with --allow-type-change (MCP: allow_type_change: true; Python: "
               "allow_type_change=True)")
    raise DocumentRefused([Issue(NOT_WRITTEN, 1, 1, errors.VALIDATION_ERROR, "type-change", message)])


def _a(json_type_name: str) -> str:
    return f"{'an' if json_type_name[0] in 'ao' else 'a'} {json_type_name}"


def retraction(obs_id: str, tenant: dict[str, str], *, reason: str, source: str) -> dict[str, Any]:
    return _with_tenant({"source": source, "event": f"Retract {obs_id}: {said(reason)}", "type": "retraction",
                         "retracts": [obs_id]}, tenant)


def relation(source_entity: str, relation_type: str, target: str, *, source: str) -> dict[str, Any]:
    return {"source": source, "event": f"Relate {source_entity} {relation_type} {target}", "type": "relation",
            "entity": source_entity, "relations": [{"type": relation_type, "target": target}]}


def merge(from_entity: str, into_entity: str, *, reason: str, source: str) -> dict[str, Any]:
    return {"source": source, "event": f"Merge {from_entity} into {into_entity}: {said(reason)}", "type": "merge",
            "entity": from_entity, "relations": [{"type": "DUPLICATE_OF", "target": into_entity}]}


def distinct(entity: str, other: str, *, reason: str, source: str) -> dict[str, Any]:
    """ENTITY and OTHER are not the same (DISTINCT_FROM, docs/design.md §20)."""
    return {"source": source, "event": f"{entity} and {other} are distinct: {said(reason)}", "type": "distinct",
            "entity": entity, "relations": [{"type": "DISTINCT_FROM", "target": other}]}


def feedback(state: NearState, target: str, outcome: str, binding: dict[str, str], *, session: str | None,
             source: str, timestamp: str | None = None) -> dict[str, Any]:
    """Feedback on `target` (accepted, rejected, rework, misleading), in the writer's `binding`,
    else the target's own tenant (the target must be visible to it)."""
    if outcome not in FEEDBACK_OUTCOMES:
        raise UsageError(f"outcome is one of {', '.join(FEEDBACK_OUTCOMES)}", parameter="outcome")
    owner = target_tenant(state, target, binding)
    front: dict[str, Any] = {
        "source": source, "event": f"Feedback on {target}: {outcome}", "type": "feedback",
        "feedback": {"target": target, "outcome": outcome, **({"session": session} if session else {})},
    }
    if timestamp:
        front["timestamp"] = timestamp
    return _with_tenant(front, binding or owner)


def reclassification(state: NearState, targets: list[str], classification: str, binding: dict[str, str], *,
                     source: str) -> dict[str, Any]:
    """Raise `targets` (observations of one tenant, visible to `binding`) to `classification`."""
    if classification not in CLASSIFICATIONS:
        raise UsageError(f"classification is one of {', '.join(CLASSIFICATIONS)}", parameter="classification")
    if not targets:
        raise UsageError("name at least one observation", parameter="IDS")
    owners = {tuple(sorted(target_tenant(state, t, binding).items())) for t in targets}
    if len(owners) > 1:
        raise UsageError("the observations belong to different tenants: reclassify each tenant's separately",
                         parameter="IDS")
    plural = "s" if len(targets) > 1 else ""
    return _with_tenant({
        "source": source, "event": f"Reclassified {len(targets)} observation{plural} as {classification}",
        "type": "reclassify", "reclassify": {"targets": list(targets), "classification": classification},
    }, dict(next(iter(owners))))
