"""Valid time and disputes (docs/design.md §19): an entity's field intervals; each a question
asked of the index at one commit, within the caller's binding."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from .fields import At, EntityId, Field, MaxClassification, text_field
from .registry import Answer, operation
from .session import Session

FieldNames = Annotated[tuple[Annotated[str, text_field("", 256)], ...],
                       Field("Only these fields (default: every field the entity ever had).", max_items=256,
                             unique_items=True)]


@dataclass(frozen=True)
class Intervals:
    """Per field, the maximal periods of valid time over which the entity's reduced value is constant."""

    entity: EntityId
    fields: FieldNames = ()
    at: At = None
    max_classification: MaxClassification = None


class FieldIntervals(Answer):
    """{entity_id, at_commit, fields: [{field, intervals: [{from, until, value, observation_id, commit, rule}]}]}."""


@operation("intervals", "reads")
def intervals(session: Session, request: Intervals) -> FieldIntervals:
    from ..read.time import intervals as spans
    from .values import Ceiling

    ceiling = Ceiling.parse(request.max_classification, "max_classification")
    at = session.at(request.at)
    return FieldIntervals(session.read(lambda scope: spans(scope, request.entity, tuple(request.fields)), at,
                                       ceiling=ceiling, stems=at is not None))
