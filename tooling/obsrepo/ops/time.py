"""Valid time and disputes (docs/design.md §19): an entity's field intervals, the contested values; each a question
asked of the index at one commit, within the caller's binding."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from ..format.contested import DEFAULT_WINDOW
from .fields import AsOf, At, EntityId, EntityType, Field, Limit, MaxClassification, Offset, text_field
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


def periods(session: Session, entity: str, at: str | None = None) -> dict[str, Any] | None:
    """`intervals` of an entity (its JSON) when one of its candidates wrote `valid`, None when none
    did: the inspector's entity page shows periods only where there are some (docs/design.md §19)."""
    from ..read.time import periods as spans

    rev = session.at(at)
    return session.read(lambda scope: spans(scope, entity), rev, stems=rev is not None)


Window = Annotated[str, Field("How far apart two effective `from`s may lie and still speak of the same time: <n>s, <n>m, "
                              "<n>h or <n>d; 0: the same instant.", min_length=1, max_length=16,
                              pattern=r"^(0|\d{1,12}[smhd])$", placeholder="W")]


@dataclass(frozen=True)
class Contested:
    """Fields where two sources disagree about the same time and only the reducer's tie-break chose."""

    entities: Annotated[tuple[Annotated[str, text_field("", 512)], ...],
                        Field("Only these entities (an entity merged away: its survivor).", max_items=256,
                              unique_items=True)] = ()
    entity_type: EntityType = None
    scopes: Annotated[tuple[Annotated[str, text_field("", 512)], ...],
                      Field("Only entities that a visible observation in ANY of these scopes is about.",
                            max_items=100)] = ()
    window: Window = DEFAULT_WINDOW
    as_of: AsOf = None
    at: At = None
    limit: Limit = 50
    offset: Offset = 0
    max_classification: MaxClassification = None


class Contests(Answer):
    """{at_commit, valid_at, window_seconds, contests: [{entity_id, field, policy, decided_by, winner, challengers}],
    total, limit, offset}."""


@operation("contested", "reads")
def contested(session: Session, request: Contested) -> Contests:
    """Every contest at a commit and a valid time, by entity id, then field (docs/design.md §19)."""
    from ..read.contested import page
    from .values import Ceiling, Moment, Page

    window = window_seconds(request.window)
    paged = Page.of(request.limit, request.offset)
    moment = Moment.optional(request.as_of, "as_of")
    ceiling = Ceiling.parse(request.max_classification, "max_classification")
    at = session.at(request.at)
    return Contests(session.read(
        lambda scope: page(scope, window, limit=paged.limit, offset=paged.offset, as_of=moment.iso() if moment else None,
                           entities=tuple(request.entities), entity_type=request.entity_type,
                           scopes=tuple(request.scopes)), at, ceiling=ceiling, stems=at is not None))


def window_seconds(written: str) -> int:
    """A window as seconds; USAGE_ERROR naming `window` when it is not `<n>s|m|h|d` or 0."""
    from ..errors import UsageError
    from ..format.contested import parse_window

    try:
        return parse_window(written)
    except ValueError as problem:
        raise UsageError(str(problem), parameter="window") from None
