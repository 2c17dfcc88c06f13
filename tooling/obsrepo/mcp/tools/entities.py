"""Entities: listed, found by an identifier, and their observations."""

from __future__ import annotations

from typing import Any

from ...ops import Entities, Find, Observations, Session, run
from ..registry import read_tool


@read_tool(Entities, "List entities", {"entity_type": "entity_type", "limit": "limit", "offset": "offset", "at": "at",
                                           "as_of": "as_of"})
def retrieve_entities(session: Session, request: Entities) -> Any:
    """Entities with their snapshots, by entity id (`obsrepo entities`' JSON:
    {entities: [{entity_id, entity_type, observation_count, last_observation_at, snapshot}],
    total, limit, offset}). An entity merged into another lives on in its survivor and is not listed."""
    return run(session, request).to_json()


@read_tool(Find, "Find an entity", {"identifier": "identifier", "entity_type": "entity_type", "as_of": "as_of"})
def retrieve_entity_by_identifier(session: Session, request: Find) -> Any:
    """Entities whose key, name, email or other identifying field matches the identifier, with
    case, accents, white space and punctuation ignored (`obsrepo find`'s JSON, the shape of
    retrieve_entities)."""
    return run(session, request).to_json()


@read_tool(Observations, "List an entity's observations", {"entity": "entity_id", "limit": "limit", "offset": "offset"})
def list_observations(session: Session, request: Observations) -> Any:
    """The observations about the entity, newest first, those of entities merged into it
    included (`obsrepo observations`' JSON: {entity_id, observations, total, limit, offset})."""
    return run(session, request).to_json()
