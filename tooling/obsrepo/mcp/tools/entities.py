"""Entities: listed, found by an identifier, and their observations."""

from __future__ import annotations

from typing import Any

from ..registry import AT, ENTITY_ID, ENTITY_TYPE, OFFSET, limit, read_tool, text


@read_tool("List entities", {"entity_type": ENTITY_TYPE, "limit": limit(50), "offset": OFFSET, "at": AT})
def retrieve_entities(repo: Any, entity_type: str | None = None, limit: int = 50, offset: int = 0,
                      at: str | None = None) -> Any:
    """Entities with their snapshots, by entity id (`obsrepo entities`' JSON:
    {entities: [{entity_id, entity_type, observation_count, last_observation_at, snapshot}],
    total, limit, offset}). An entity merged into another lives on in its survivor and is not listed."""
    return repo.entities(entity_type, limit=limit, offset=offset, at=at)


@read_tool("Find an entity", {
    "identifier": text("A key, name, email or other identifying value, e.g. \"ACME Corp.\".", 1024),
    "entity_type": ENTITY_TYPE,
}, required=("identifier",))
def retrieve_entity_by_identifier(repo: Any, identifier: str, entity_type: str | None = None) -> Any:
    """Entities whose key, name, email or other identifying field matches the identifier, with
    case, accents, white space and punctuation ignored (`obsrepo find`'s JSON, the shape of
    retrieve_entities)."""
    return repo.find(identifier, entity_type)


@read_tool("List an entity's observations", {"entity_id": ENTITY_ID, "limit": limit(50), "offset": OFFSET},
           required=("entity_id",))
def list_observations(repo: Any, entity_id: str, limit: int = 50, offset: int = 0) -> Any:
    """The observations about the entity, newest first, those of entities merged into it
    included (`obsrepo observations`' JSON: {entity_id, observations, total, limit, offset})."""
    return repo.observations(entity_id, limit=limit, offset=offset)
