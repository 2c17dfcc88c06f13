"""Identity (docs/design.md §20): the review queue of entities that may be the same, and the
second way to decide a pair (the first is `merge`): declaring the two distinct."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from .fields import At, EntityId, EntityType, Field, Limit, Offset, Reason, Source, moment
from .registry import Answer, operation
from .session import Session
from .values import Destination, Moment, Page, ProposalBranch
from .writes import Written, write

MinScore = Annotated[float | None, Field("Only pairs scoring at least this (0..1).", minimum=0, maximum=1)]


@dataclass(frozen=True)
class Identities:
    entity_type: EntityType = None
    min_score: MinScore = None
    as_of: Annotated[str | int | None, moment(
        "Valid time: only observations whose period holds this (without a period: timestamp ≤ this)")] = None
    at: At = None
    limit: Limit = 50
    offset: Offset = 0


class IdentityCandidates(Answer):
    """{at_commit, candidates: [{entities: [A, B], entity_type, score, tier, evidence: [{field, values,
    observations, comparison, similarity}]}], total, limit, offset} (docs/design.md §20)."""


@operation("identities", "reads")
def identities(session: Session, request: Identities) -> IdentityCandidates:
    """Pairs of entities of one type that may be the same, not merged and not declared distinct,
    by score, then the pair."""
    from ..errors import UsageError
    from ..read.identity import candidates

    page = Page.of(request.limit, request.offset)
    as_of = Moment.optional(request.as_of, "as_of")
    score = request.min_score
    if score is not None and (isinstance(score, bool) or not 0 <= score <= 1):
        raise UsageError("min_score is a number in [0, 1]", parameter="min_score")
    at = session.at(request.at)
    return IdentityCandidates(session.read(  # stems no words: without the fts extension unless a commit is patched in
        lambda scope: candidates(scope, request.entity_type, score, as_of.value if as_of else None,
                                 limit=page.limit, offset=page.offset), at, stems=at is not None))


@dataclass(frozen=True)
class Distinct:
    entity: EntityId
    other: EntityId
    reason: Reason
    source: Source = None
    destination: Destination = ProposalBranch()


@operation("distinct", "writes")
def distinct(session: Session, request: Distinct) -> Written:
    """Declare two entities distinct (DISTINCT_FROM): the pair leaves the identity queue for good."""
    from ..errors import UsageError
    from ..write.statements import distinct as declared

    if request.entity == request.other:
        raise UsageError("an entity is not distinct from itself", parameter="other")
    front = declared(request.entity, request.other, reason=request.reason, source=request.source or session.default_source())
    return write(session, front, "", request.destination, "distinct")
