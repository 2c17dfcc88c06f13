"""One belief as a person reads it: the comprehension document, the observations it cites and
its confidence version by version (the inspector's comprehension page, docs/design.md §17)."""

from __future__ import annotations

from dataclasses import dataclass

from .registry import Answer, operation
from .session import Session


@dataclass(frozen=True)
class Belief:
    comprehension_id: str
    at: str | None = None


class BeliefShown(Answer):
    """{id, topic, domain, version, verified, created, updated, prior, posterior, body, path,
    commit, author, committed_at, observations: [{id, used, exists, timestamp, event, entity}],
    history: [{version, prior_confidence, confidence, statement, updated, commit, author,
    committed_at}], at_commit}."""


@operation("belief", "reads")
def belief(session: Session, request: Belief) -> BeliefShown:
    from ..read.comprehensions import belief as one

    return BeliefShown(session.read(lambda scope: one(scope, request.comprehension_id), session.at(request.at)))
