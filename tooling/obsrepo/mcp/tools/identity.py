"""The identity review queue (docs/design.md §20): pairs of entities that may be the same, and
the declaration that two are not."""

from __future__ import annotations

from typing import Any

from ...ops import Distinct, Identities, Session, run
from ..registry import read_tool, write_tool
from .statements import _described


@read_tool(Identities, "Identity candidates", {"entity_type": "entity_type", "min_score": "min_score", "as_of": "as_of",
                                               "at": "at", "limit": "limit", "offset": "offset"})
def list_identity_candidates(session: Session, request: Identities) -> Any:
    """Pairs of entities of one type that may be the same (`obsrepo identities`' JSON): not merged
    and not declared distinct, each with a score in [0, 1], a tier (`strong`: a key of the
    type's schema matched; `probable`: the score reached the threshold) and the evidence field
    by field (values, observations, comparison, similarity). Best first. Decide a pair with
    `merge_entities` or `declare_distinct`."""
    return run(session, request).to_json()


@write_tool(Distinct, "Declare entities distinct", {"entity": "entity_id", "other": "other_entity_id", "reason": "reason"})
@_described
def declare_distinct(session: Session, request: Distinct) -> Any:
    """Declare two entities distinct: a `DISTINCT_FROM` relation from ENTITY to OTHER, after which
    the pair leaves `list_identity_candidates` for good."""
    return run(session, request).to_json()

