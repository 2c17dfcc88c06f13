"""Relationships between entities: one entity's, and the entities reachable through them."""

from __future__ import annotations

from typing import Any

from ...ops import Related, Relations, Session, run
from ..registry import read_tool

INCLUDE_ENTITIES = {"type": "boolean", "default": True,
                    "description": "Include each entity's snapshot (false: ids, types and counts only)."}


@read_tool(Relations, "List relationships", {"entity": "entity_id", "types": "relationship_types", "direction": "direction",
                                                    "as_of": "as_of"})
def list_relationships(session: Session, request: Relations) -> Any:
    """The relationships of the entity, both directions unless `direction` says otherwise;
    retracted relations do not count (`obsrepo relations`' JSON: {relationships: [{type,
    source_entity_id, target_entity_id, observation_id, path}], total})."""
    return run(session, request).to_json()


@read_tool(Related, "Related entities", {"entity": "entity_id", "types": "relationship_types", "direction": "direction",
                                         "hops": "max_hops", "as_of": "as_of"}, extras={"include_entities": INCLUDE_ENTITIES})
def retrieve_related_entities(session: Session, request: Related, include_entities: bool = True) -> Any:
    """Entities reachable from the entity through relationships, each once, up to `max_hops`
    away; a merged-away entity is listed only as its survivor (`obsrepo related`'s JSON:
    {entities, relationships, total_entities, total_relationships, hops_traversed})."""
    result = run(session, request).to_json()
    if not include_entities:
        result["entities"] = [{k: v for k, v in entity.items() if k != "snapshot"} for entity in result["entities"]]
    return result
