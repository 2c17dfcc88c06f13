"""Events in time, and how an entity changed commit by commit."""

from __future__ import annotations

from typing import Any

from ..registry import ENTITY_ID, OFFSET, instant_text, limit, moment, read_tool, text


@read_tool("Timeline events", {
    "entity_id": ENTITY_ID | {"description": "Only events of this entity."},
    "event_type": text("Only events of this type (InvoiceIssued, PaymentDue, an observation type …).", 256),
    "after": moment("From this time on (inclusive)"),
    "before": moment("Before this time (exclusive)"),
    "limit": limit(1000),
    "offset": OFFSET,
})
def list_timeline_events(repo: Any, entity_id: str | None = None, event_type: str | None = None,
                         after: str | int | None = None, before: str | int | None = None, limit: int = 1000,
                         offset: int = 0) -> Any:
    """Events from date fields of snapshots (invoice_date → InvoiceIssued) and from each
    observation's own timestamp, newest first (`obsrepo timeline`'s JSON: {events: [{id,
    event_type, event_timestamp, entity_id, field, observation_id}], total})."""
    return repo.timeline(entity=entity_id, event_type=event_type, after=instant_text(after, "after"),
                         before=instant_text(before, "before"), limit=limit, offset=offset)


@read_tool("Entity history", {"entity_id": ENTITY_ID}, required=("entity_id",))
def retrieve_entity_history(repo: Any, entity_id: str) -> Any:
    """How the entity's snapshot changed, commit by commit, oldest first: every field that
    changed with the commit, its author and the observation that changed it (`obsrepo
    history`'s JSON: {entity_id, changes: [{commit, committed_at, author, field, old, new,
    observation_id}]})."""
    return repo.history(entity_id)
