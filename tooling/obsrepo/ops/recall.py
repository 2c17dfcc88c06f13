"""The recall operation: the session memory block of docs/design.md §15.

What an agent should know at the start of a session, compiled from one commit within the
caller's binding and ceiling: the snapshots of the entities in scope with the observation that
decided each field, the beliefs that cite them, the most relevant observations; every fact
line cited `<observation id>@<commit>`, the whole within `budget` tokens (characters / 4),
byte-identical for the same commit, inputs and embedder. The response holds the Markdown and
the JSON of the same block; an adapter prints the one asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from ..errors import UsageError
from .fields import AsOf, At, Field, MaxClassification, text_field
from .reads import Query, filters, meaning
from .registry import operation
from .session import Session
from .values import Ceiling, Moment

DEFAULT_BUDGET = 2000
MIN_BUDGET = 64  # the header and the line that says what was left out, whatever the counts
MAX_BUDGET = 100_000


@dataclass(frozen=True)
class Recall:
    """The block for these entities and scopes, its observations ranked by `text` when given."""

    entities: Annotated[tuple[Annotated[str, text_field("", 512)], ...],
                        Field("Entity ids (type/key) the block is about; their snapshots come first.", max_items=100)] = ()
    scopes: Annotated[tuple[Annotated[str, text_field("", 512)], ...],
                      Field("Scope ids: only observations (and their entities) with ANY of them.", max_items=100)] = ()
    text: Annotated[str | None, text_field("What the session is about: observations are ranked by it (hybrid with an "
                                           "embedder configured, else BM25).", 1024)] = None
    budget: Annotated[int, Field(f"At most this many tokens, counted as characters / 4 ({MIN_BUDGET}..{MAX_BUDGET}).",
                                 minimum=MIN_BUDGET, maximum=MAX_BUDGET)] = DEFAULT_BUDGET
    at: At = None
    as_of: AsOf = None
    max_classification: MaxClassification = None


@dataclass(frozen=True)
class Block:
    """The block as Markdown (`markdown`) and as JSON (`to_json()`: {at_commit, entities,
    beliefs, observations, omitted})."""

    data: dict[str, Any]
    markdown: str

    def to_json(self) -> dict[str, Any]:
        return self.data


@operation("recall", "reads")
def recall(session: Session, request: Recall) -> Block:
    from ..read.recall import MAX_OBSERVATIONS, RecallRequest
    from ..read.recall import recall as compile_block

    if not MIN_BUDGET <= request.budget <= MAX_BUDGET:
        raise UsageError(f"budget {request.budget} is not between {MIN_BUDGET} and {MAX_BUDGET} tokens ({MIN_BUDGET}: "
                         "the smallest block, its header and the line that says what was left out)", parameter="budget")
    ceiling = Ceiling.parse(request.max_classification, "max_classification")
    moment = Moment.optional(request.as_of, "as_of")
    query = Query(scopes=request.scopes, text=request.text, limit=MAX_OBSERVATIONS, at=request.at)
    engine = filters(query)
    engine.brief = True  # the block shows an observation's id, commit, time and event, and reads its entity
    engine.semantic = meaning(session, query)
    match = "lexical" if engine.semantic is None else engine.semantic.match
    engine.as_of = moment.iso() if moment else None
    ask = RecallRequest(tuple(request.entities), engine, request.budget, match)
    block = session.read(lambda scope: compile_block(scope, ask), session.at(request.at), ceiling=ceiling)
    return Block(block["json"], block["markdown"])
