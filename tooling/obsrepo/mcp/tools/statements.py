"""Statements about what is already recorded: a correction, a retraction, a relation, a merge.
Each is one new observation proposed as one commit on the server's proposal branch (as the
CLI's `correct`, `retract`, `relate`, `merge` with --commit)."""

from __future__ import annotations

from typing import Any

from ..registry import ENTITY_ID, bounded_json, text, write_tool

MAX_VALUE = 64 * 1024  # characters of a corrected value as JSON
OBSERVATION_ID = text("An observation id, e.g. obs-20260213-102500-0001.", 96)
REASON = text("Why, in one line (it goes into the new observation's event).", 1000)
WHERE = ("as one new commit on the server's proposal branch (`obsrepo mcp --branch`, default obsrepo/proposals); "
         "its source is the server's git user (`human/<git user name>`, or the name of OBSREPO_AUTHOR), as "
         "on the command line; a tenant-bound server's statements carry its tenant. Refused when it would "
         "break a repository rule (of a tenant-bound server: among the documents its tenant can see); a "
         "refused write changes nothing. Answers with {id, path, content_hash, "
         "commit, branch}.")


def _described(function: Any) -> Any:
    function.__doc__ = f"{(function.__doc__ or '').rstrip()}\n\n    Written {WHERE}"
    return function


@write_tool("Correct a field", {
    "entity_id": ENTITY_ID,
    "field": text("The field of the entity's snapshot to correct.", 256),
    "value": {"anyOf": [{"type": "string", "maxLength": MAX_VALUE}, {"type": "integer"}, {"type": "number"},
                        {"type": "boolean"}, {"type": "null"}, {"type": "array"}, {"type": "object"}],
              "description": "The right value, of the field's current JSON type (a number as a number, not as text); "
                             "null clears the field."},
    "reason": REASON,
    "allow_type_change": {"type": "boolean", "default": False,
                          "description": "Accept a value of another JSON type than the field's current value."},
}, required=("entity_id", "field", "value", "reason"))
@_described
def correct_field(repo: Any, entity_id: str, field: str, value: Any, reason: str, allow_type_change: bool = False) -> Any:
    """Correct the current value of one field of an entity: a priority-1000 observation that
    `corrects` the observation winning the field now (read at the proposal branch's tip, so a
    second correction corrects the first), in that observation's tenant, with the event
    `Correct FIELD of ENTITY: REASON`. ENTITY_NOT_FOUND / FIELD_NOT_FOUND when there is nothing
    to correct. A value whose JSON type differs from the current value's (the text "333" over
    the number 120) is refused, VALIDATION_ERROR with rule `type-change`, unless
    `allow_type_change` is true; null, which clears the field, always passes."""
    bounded_json(value, "value", MAX_VALUE)
    return repo.correct(entity_id, field, value, reason=reason, allow_type_change=allow_type_change)


@write_tool("Retract an observation", {"observation_id": OBSERVATION_ID, "reason": REASON},
            required=("observation_id", "reason"))
@_described
def retract_observation(repo: Any, observation_id: str, reason: str) -> Any:
    """Withdraw an observation from queries and snapshots (its file stays in history): an
    observation that `retracts` it, in its tenant. REF_NOT_FOUND for an id that does not exist
    or that the server's tenant cannot see."""
    return repo.retract(observation_id, reason=reason)


@write_tool("Create a relationship", {
    "source_entity_id": ENTITY_ID,
    "relationship_type": text("PART_OF, DEPENDS_ON, REFERS_TO, SETTLES, SUPERSEDES … or your own UPPER_SNAKE_CASE name.", 64),
    "target_entity_id": ENTITY_ID,
}, required=("source_entity_id", "relationship_type", "target_entity_id"))
@_described
def create_relationship(repo: Any, source_entity_id: str, relationship_type: str, target_entity_id: str) -> Any:
    """Record a relationship SOURCE —TYPE→ TARGET: an observation about the source entity with
    one relation. INVALID_RELATIONSHIP_TYPE for a type that is not UPPER_SNAKE_CASE,
    ENTITY_NOT_FOUND for a target without observations, CYCLE_DETECTED for a PART_OF or
    DEPENDS_ON cycle."""
    return repo.relate(source_entity_id, relationship_type, target_entity_id)


@write_tool("Merge entities", {"from_entity_id": ENTITY_ID, "to_entity_id": ENTITY_ID, "reason": REASON},
            required=("from_entity_id", "to_entity_id", "reason"))
@_described
def merge_entities(repo: Any, from_entity_id: str, to_entity_id: str, reason: str) -> Any:
    """Merge one entity into another: a `DUPLICATE_OF` relation from FROM to TO, after which
    FROM's observations count for TO. An entity is merged at most once (ENTITY_ALREADY_MERGED);
    merges may not form a cycle (CYCLE_DETECTED)."""
    return repo.merge(from_entity_id, to_entity_id, reason=reason)
