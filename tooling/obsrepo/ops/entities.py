"""Entity reads: an entity's snapshot and the provenance of a field, the entity lists (by
type, by identifying value), an entity's observations, relationships, neighbourhood, events
and history; each a question asked of the index at one commit, within the caller's binding,
its values parsed once (values.py) as every read's are (reads.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from .fields import AsOf, At, EntityId, EntityType, Field, Limit, MaxClassification, Offset, moment, text_field
from .registry import Answer, operation
from .session import Session
from .values import Ceiling, Moment, Page

Direction = Annotated[str, Field("out (outbound): the entity's own relations; in (inbound): those pointing at it; both.",
                                 choices=("both", "out", "in", "outbound", "inbound"))]
DIRECTIONS = {"outbound": "out", "inbound": "in"}  # seed 003's spelling of out and in
RelationTypes = Annotated[tuple[Annotated[str, text_field("", 128)], ...],
                          Field("Only these relationship types (PART_OF, DEPENDS_ON, REFERS_TO, …).", max_items=64,
                                unique_items=True)]


@dataclass(frozen=True)
class Snapshot:
    entity: EntityId
    at: At = None
    as_of: AsOf = None
    explain: Annotated[bool, Field("Also list every candidate value per field and the rule that decided.")] = False
    max_classification: MaxClassification = None
    include_expired: Annotated[bool, Field("Also count observations that retention expired.")] = False


class EntitySnapshot(Answer):
    """The snapshot of docs/design.md §4 (with `merged_from`, and `explain`'s challengers)."""


@operation("snapshot", "reads")
def snapshot(session: Session, request: Snapshot) -> EntitySnapshot:
    from ..read.snapshots import snapshot as reduce

    as_of = _valid_time(request.as_of)
    ceiling = Ceiling.parse(request.max_classification, "max_classification")
    at = session.at(request.at)
    return EntitySnapshot(session.read(
        lambda scope: reduce(scope, request.entity, as_of=as_of, explain=request.explain),
        at, ceiling=ceiling, include_expired=request.include_expired, stems=at is not None))


@dataclass(frozen=True)
class Provenance:
    entity: EntityId
    field: Annotated[str, text_field("The field of the snapshot.", 256)]
    at: At = None
    max_classification: MaxClassification = None
    include_expired: Annotated[bool, Field("Also count observations that retention expired.")] = False


class FieldProvenance(Answer):
    """{entity_id, field, value, observation_id, path, commit, author, committed_at, …}."""


@operation("provenance", "reads")
def provenance(session: Session, request: Provenance) -> FieldProvenance:
    from ..read.snapshots import provenance as winner

    ceiling = Ceiling.parse(request.max_classification, "max_classification")
    at = session.at(request.at)
    return FieldProvenance(session.read(lambda scope: winner(scope, request.entity, request.field), at, ceiling=ceiling,
                                        include_expired=request.include_expired, stems=at is not None))


@dataclass(frozen=True)
class Entities:
    entity_type: EntityType = None
    limit: Limit = 50
    offset: Offset = 0
    at: At = None
    as_of: AsOf = None


class EntityPage(Answer):
    """{entities: [{entity_id, entity_type, observation_count, last_observation_at, snapshot}], total, …}."""


@operation("entities", "reads")
def entities(session: Session, request: Entities) -> EntityPage:
    from ..read.entities import list_entities

    page = Page.of(request.limit, request.offset)
    as_of = _valid_time(request.as_of)
    return EntityPage(session.read(lambda scope: list_entities(scope, request.entity_type, limit=page.limit,
                                                               offset=page.offset, as_of=as_of), session.at(request.at)))


@dataclass(frozen=True)
class Find:
    identifier: Annotated[str, text_field("A key, name, email or other identifying value, e.g. \"ACME Corp.\".", 1024)]
    entity_type: EntityType = None
    limit: Limit = 50
    offset: Offset = 0
    at: At = None
    as_of: AsOf = None


@operation("find", "reads")
def find(session: Session, request: Find) -> EntityPage:
    """Entities whose key, name, email or other identifying field matches, whatever the case,
    white space or punctuation."""
    from ..read.entities import find as matching

    page = Page.of(request.limit, request.offset)
    as_of = _valid_time(request.as_of)
    return EntityPage(session.read(lambda scope: matching(scope, request.identifier, request.entity_type,
                                                          limit=page.limit, offset=page.offset, as_of=as_of),
                                   session.at(request.at)))


def _valid_time(given: str | int | None) -> str | None:
    """`as_of` as canonical UTC text (None: the commit's time decides, docs/design.md §19)."""
    moment = Moment.optional(given, "as_of")
    return moment.iso() if moment else None


@dataclass(frozen=True)
class Observations:
    entity: EntityId
    limit: Limit = 50
    offset: Offset = 0
    at: At = None


class ObservationPage(Answer):
    """{entity_id, observations, total, limit, offset}."""


@operation("observations", "reads")
def observations(session: Session, request: Observations) -> ObservationPage:
    from ..read.entities import observations_of

    page = Page.of(request.limit, request.offset)
    return ObservationPage(session.read(lambda scope: observations_of(scope, request.entity, limit=page.limit,
                                                                      offset=page.offset), session.at(request.at)))


@dataclass(frozen=True)
class Relations:
    entity: EntityId
    direction: Direction = "both"
    types: RelationTypes = ()
    at: At = None
    as_of: AsOf = None


class RelationList(Answer):
    """{relationships: [{type, source_entity_id, target_entity_id, observation_id, path}], total}."""


@operation("relations", "reads")
def relations(session: Session, request: Relations) -> RelationList:
    from ..read.entities import relationships

    direction = DIRECTIONS.get(request.direction, request.direction)
    as_of = _valid_time(request.as_of)
    return RelationList(session.read(lambda scope: relationships(scope, request.entity, direction=direction,
                                                                 types=tuple(request.types), as_of=as_of),
                                     session.at(request.at)))


@dataclass(frozen=True)
class Related:
    entity: EntityId
    types: RelationTypes = ()
    direction: Direction = "both"
    hops: Annotated[int, Field("How many relationships away to go (1 or more).", minimum=1, maximum=1000)] = 1
    at: At = None
    limit: Annotated[int | None, Field("List only the first N entities by id (the totals still count every one).")] = None
    as_of: AsOf = None


class Neighbourhood(Answer):
    """{entities, relationships, total_entities, total_relationships, hops_traversed}."""


@operation("related", "reads")
def related(session: Session, request: Related) -> Neighbourhood:
    from ..read.entities import related as walk

    direction = DIRECTIONS.get(request.direction, request.direction)
    as_of = _valid_time(request.as_of)
    return Neighbourhood(session.read(lambda scope: walk(scope, request.entity, types=tuple(request.types),
                                                         direction=direction, hops=request.hops, limit=request.limit,
                                                         as_of=as_of),
                                      session.at(request.at)))


@dataclass(frozen=True)
class Timeline:
    entity: Annotated[str | None, text_field("Only events of this entity.", 512)] = None
    event_type: Annotated[str | None, text_field("Only events of this type (InvoiceIssued, PaymentDue, an observation type …).",
                                                 256)] = None
    after: Annotated[str | int | None, moment("From this time on (inclusive)")] = None
    before: Annotated[str | int | None, moment("Before this time (exclusive)")] = None
    limit: Limit = 1000
    offset: Offset = 0
    at: At = None
    max_classification: MaxClassification = None


class Events(Answer):
    """{events: [{id, event_type, event_timestamp, entity_id, field, observation_id}], total}."""


@operation("timeline", "reads")
def timeline(session: Session, request: Timeline) -> Events:
    from ..read.entities import timeline as events

    page = Page.of(request.limit, request.offset)
    low, high = Moment.optional(request.after, "after"), Moment.optional(request.before, "before")
    ceiling = Ceiling.parse(request.max_classification, "max_classification")
    return Events(session.read(lambda scope: events(scope, entity=request.entity, event_type=request.event_type,
                                                    limit=page.limit, offset=page.offset,
                                                    after=low.value if low else None, before=high.value if high else None),
                               session.at(request.at), ceiling=ceiling))


@dataclass(frozen=True)
class History:
    entity: EntityId


class Changes(Answer):
    """{entity_id, changes: [{commit, committed_at, author, field, old, new, observation_id}]}."""


@operation("history", "reads")
def history(session: Session, request: History) -> Changes:
    """How the entity's snapshot changed, commit by commit."""
    from ..read.entities import history as changes

    return Changes(session.read(lambda scope: changes(scope, request.entity)))
