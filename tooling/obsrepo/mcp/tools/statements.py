"""Statements about what is already recorded: a correction, a retraction, a relation, a merge.
Each is one new observation proposed as one commit on the server's proposal branch (as the
CLI's `correct`, `retract`, `relate`, `merge` with --commit)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ...ops import Correct, Merge, Relate, Retract, Session, run
from ..registry import bounded_json, write_tool

F = TypeVar("F", bound=Callable[..., Any])
MAX_VALUE = 64 * 1024  # characters of a corrected value as JSON
WHERE = ("as one new commit on the server's proposal branch (`obsrepo mcp --branch`, default obsrepo/proposals); "
         "its source is the server's git user (`human/<git user name>`, or the name of OBSREPO_AUTHOR), as "
         "on the command line; a tenant-bound server's statements carry its tenant. Refused when it would "
         "break a repository rule (of a tenant-bound server: among the documents its tenant can see); a "
         "refused write changes nothing. Answers with {id, path, content_hash, "
         "commit, branch}.")


def _described(function: F) -> F:
    function.__doc__ = f"{(function.__doc__ or '').rstrip()}\n\n    Written {WHERE}"
    return function


@write_tool(Correct, "Correct a field", {"entity": "entity_id", "field": "field", "value": "value", "reason": "reason",
                                         "allow_type_change": "allow_type_change", "valid_from": "valid_from",
                                         "valid_until": "valid_until"})
@_described
def correct_field(session: Session, request: Correct) -> Any:
    """Correct the current value of one field of an entity: a priority-1000 observation that
    `corrects` the observation winning the field now (read at the proposal branch's tip, so a
    second correction corrects the first), in that observation's tenant, with the event
    `Correct FIELD of ENTITY: REASON`. ENTITY_NOT_FOUND / FIELD_NOT_FOUND when there is nothing
    to correct. A value whose JSON type differs from the current value's (the text "333" over
    the number 120) is refused, VALIDATION_ERROR with rule `type-change`, unless
    `allow_type_change` is true; null, which clears the field, always passes."""
    bounded_json(request.value, "value", MAX_VALUE)
    return run(session, request).to_json()


@write_tool(Retract, "Retract an observation", {"observation_id": "observation_id", "reason": "reason"})
@_described
def retract_observation(session: Session, request: Retract) -> Any:
    """Withdraw an observation from queries and snapshots (its file stays in history): an
    observation that `retracts` it, in its tenant. REF_NOT_FOUND for an id that does not exist
    or that the server's tenant cannot see."""
    return run(session, request).to_json()


@write_tool(Relate, "Create a relationship", {"source_entity": "source_entity_id", "type": "relationship_type",
                                               "target": "target_entity_id"})
@_described
def create_relationship(session: Session, request: Relate) -> Any:
    """Record a relationship SOURCE —TYPE→ TARGET: an observation about the source entity with
    one relation. INVALID_RELATIONSHIP_TYPE for a type that is not UPPER_SNAKE_CASE,
    ENTITY_NOT_FOUND for a target without observations, CYCLE_DETECTED for a PART_OF or
    DEPENDS_ON cycle."""
    return run(session, request).to_json()


@write_tool(Merge, "Merge entities", {"from_entity": "from_entity_id", "into_entity": "to_entity_id", "reason": "reason"})
@_described
def merge_entities(session: Session, request: Merge) -> Any:
    """Merge one entity into another: a `DUPLICATE_OF` relation from FROM to TO, after which
    FROM's observations count for TO. An entity is merged at most once (ENTITY_ALREADY_MERGED);
    merges may not form a cycle (CYCLE_DETECTED)."""
    return run(session, request).to_json()
