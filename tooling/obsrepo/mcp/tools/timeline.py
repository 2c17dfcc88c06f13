"""Events in time, and how an entity changed commit by commit."""

from __future__ import annotations

from typing import Any

from ...ops import History, Session, Timeline, run
from ..registry import read_tool


@read_tool(Timeline, "Timeline events", {"entity": "entity_id", "event_type": "event_type", "after": "after",
                                         "before": "before", "limit": "limit", "offset": "offset"})
def list_timeline_events(session: Session, request: Timeline) -> Any:
    """Events from date fields of snapshots (invoice_date → InvoiceIssued) and from each
    observation's own timestamp, newest first (`obsrepo timeline`'s JSON: {events: [{id,
    event_type, event_timestamp, entity_id, field, observation_id}], total})."""
    return run(session, request).to_json()


@read_tool(History, "Entity history", {"entity": "entity_id"})
def retrieve_entity_history(session: Session, request: History) -> Any:
    """How the entity's snapshot changed, commit by commit, oldest first: every field that
    changed with the commit, its author and the observation that changed it (`obsrepo
    history`'s JSON: {entity_id, changes: [{commit, committed_at, author, field, old, new,
    observation_id}]})."""
    return run(session, request).to_json()
