"""Relationships between entities: one entity's, and the entities reachable through them."""

from __future__ import annotations

from typing import Any

from ..registry import DIRECTION, ENTITY_ID, RELATIONSHIP_TYPES, read_tool

DIRECTIONS = {"outbound": "out", "inbound": "in"}  # seed 003's spelling


@read_tool("List relationships", {"entity_id": ENTITY_ID, "relationship_types": RELATIONSHIP_TYPES, "direction": DIRECTION},
           required=("entity_id",))
def list_relationships(repo: Any, entity_id: str, relationship_types: list[str] | None = None,
                       direction: str = "both") -> Any:
    """The relationships of the entity, both directions unless `direction` says otherwise;
    retracted relations do not count (`obsrepo relations`' JSON: {relationships: [{type,
    source_entity_id, target_entity_id, observation_id, path}], total})."""
    return repo.relationships(entity_id, direction=DIRECTIONS.get(direction, direction),
                              types=tuple(relationship_types or ()))


@read_tool("Related entities", {
    "entity_id": ENTITY_ID,
    "relationship_types": RELATIONSHIP_TYPES,
    "direction": DIRECTION,
    "max_hops": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 1,
                 "description": "How many relationships away to go."},
    "include_entities": {"type": "boolean", "default": True,
                         "description": "Include each entity's snapshot (false: ids, types and counts only)."},
}, required=("entity_id",))
def retrieve_related_entities(repo: Any, entity_id: str, relationship_types: list[str] | None = None,
                              direction: str = "both", max_hops: int = 1, include_entities: bool = True) -> Any:
    """Entities reachable from the entity through relationships, each once, up to `max_hops`
    away; a merged-away entity is listed only as its survivor (`obsrepo related`'s JSON:
    {entities, relationships, total_entities, total_relationships, hops_traversed})."""
    result = repo.related(entity_id, types=tuple(relationship_types or ()), direction=DIRECTIONS.get(direction, direction),
                          hops=max_hops)
    if not include_entities:
        result["entities"] = [{k: v for k, v in entity.items() if k != "snapshot"} for entity in result["entities"]]
    return result
