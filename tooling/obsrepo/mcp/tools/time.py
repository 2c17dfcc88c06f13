"""Valid time and disputes (docs/design.md §19): an entity's field intervals."""

from __future__ import annotations

from typing import Any

from ...ops import Intervals, Session, run
from ..registry import read_tool


@read_tool(Intervals, "Field intervals", {"entity": "entity_id", "fields": "fields", "at": "at"})
def retrieve_field_intervals(session: Session, request: Intervals) -> Any:
    """An entity's fields over valid time (`obsrepo intervals`'s JSON): per field, the maximal
    periods [from, until) over which the reduced value is constant (until null: open), each with
    its value, the observation that decided, its commit and the rule. A period where the field
    is absent is not listed. With `at`, what the repository believed at that commit about every
    moment. ENTITY_NOT_FOUND when no observation is about it."""
    return run(session, request).to_json()
