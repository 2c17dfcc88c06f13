"""An entity's snapshot, and where one of its fields came from."""

from __future__ import annotations

from typing import Any

from ...ops import Provenance, Session, Snapshot, run
from ..registry import read_tool


@read_tool(Snapshot, "Entity snapshot", {"entity": "entity_id", "at": "at", "as_of": "as_of", "explain": "explain"})
def retrieve_entity_snapshot(session: Session, request: Snapshot) -> Any:
    """The entity as its observations say it is, field by field, with the observation each
    field came from (`obsrepo snapshot`'s JSON). Per field the highest priority wins, then the
    most specific, then the latest; corrections win over everything, retracted observations do
    not count, and an entity merged into another answers with the survivor (`merged_from`).
    ENTITY_NOT_FOUND when no observation is about it."""
    return run(session, request).to_json()


@read_tool(Provenance, "Field provenance", {"entity": "entity_id", "field": "field", "at": "at"})
def retrieve_field_provenance(session: Session, request: Provenance) -> Any:
    """Where one field of the entity's snapshot came from: its value, the winning observation,
    its file, the commit that added it, the author, source_ref, interpretation and the policy
    that decided (`obsrepo provenance`'s JSON). FIELD_NOT_FOUND when the snapshot has no such field."""
    return run(session, request).to_json()
