"""An entity's snapshot, and where one of its fields came from."""

from __future__ import annotations

from typing import Any

from ..registry import AT, ENTITY_ID, instant_text, moment, read_tool, text


@read_tool("Entity snapshot", {
    "entity_id": ENTITY_ID,
    "at": AT,
    "as_of": moment("Valid time: only observations with timestamp ≤ this"),
    "explain": {"type": "boolean", "default": False,
                "description": "Also list every candidate value per field and the rule that decided."},
}, required=("entity_id",))
def retrieve_entity_snapshot(repo: Any, entity_id: str, at: str | None = None, as_of: str | int | None = None,
                             explain: bool = False) -> Any:
    """The entity as its observations say it is, field by field, with the observation each
    field came from (`obsrepo snapshot`'s JSON). Per field the highest priority wins, then the
    most specific, then the latest; corrections win over everything, retracted observations do
    not count, and an entity merged into another answers with the survivor (`merged_from`).
    ENTITY_NOT_FOUND when no observation is about it."""
    return repo.snapshot(entity_id, at=at, as_of=instant_text(as_of, "as_of"), explain=explain)


@read_tool("Field provenance", {
    "entity_id": ENTITY_ID,
    "field": text("The field of the snapshot.", 256),
    "at": AT,
}, required=("entity_id", "field"))
def retrieve_field_provenance(repo: Any, entity_id: str, field: str, at: str | None = None) -> Any:
    """Where one field of the entity's snapshot came from: its value, the winning observation,
    its file, the commit that added it, the author, source_ref, interpretation and the policy
    that decided (`obsrepo provenance`'s JSON). FIELD_NOT_FOUND when the snapshot has no such field."""
    return repo.provenance(entity_id, field, at=at)
