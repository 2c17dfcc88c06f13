"""Valid time and disputes (docs/design.md §19): an entity's field intervals, the contested values."""

from __future__ import annotations

from typing import Any

from ...ops import Contested, Intervals, Session, run
from ..registry import read_tool


@read_tool(Intervals, "Field intervals", {"entity": "entity_id", "fields": "fields", "at": "at"})
def retrieve_field_intervals(session: Session, request: Intervals) -> Any:
    """An entity's fields over valid time (`obsrepo intervals`'s JSON): per field, the maximal
    periods [from, until) over which the reduced value is constant (until null: open), each with
    its value, the observation that decided, its commit and the rule. A period where the field
    is absent is not listed. With `at`, what the repository believed at that commit about every
    moment. ENTITY_NOT_FOUND when no observation is about it."""
    return run(session, request).to_json()


@read_tool(Contested, "Contested values", {"entities": "entities", "entity_type": "entity_type", "scopes": "scopes",
                                           "window": "window", "as_of": "as_of", "at": "at", "limit": "limit",
                                           "offset": "offset"})
def list_contested(session: Session, request: Contested) -> Any:
    """Fields where two sources disagree about the same time (`obsrepo contested`'s JSON): with no
    correction of the field, an observation at the winner's priority from another source gives
    another value, its effective from within `window` (default 1d; <n>s|m|h|d, 0 = the same
    instant) of the winner's. The reducer still decides: `decided_by` names the tie-break
    (specificity, timestamp or id). By entity id, then field; challengers in the reducer's order.
    A correction (`correct_observation`) settles a contest."""
    return run(session, request).to_json()
