"""The door: typed operations every adapter goes through (docs/design.md, "The door").

    from obsrepo.ops import Session, Query, run
    session = Session(".", binding=Binding.parse("org=northwind", "tenant"))
    page = run(session, Query(scopes=("task/42",), limit=10)).to_json()

An operation is a frozen request, one function and a typed response with `to_json()`;
`OPERATIONS` lists them by name with their kind (reads or writes). Values are parsed once
(values.py) and errors name the request's field; each adapter renames fields to its own
surface with `ObsrepoError.renamed`. Nothing here prints or knows an adapter's names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as mypy sees them; at run time each loads with its module (below)
    from .adopt import Init, Initialized, init
    from .beliefs import Belief, BeliefShown
    from .embedding import EmbedInfo, EmbedPull
    from .entities import Entities, Find, History, Observations, Provenance, Related, Relations, Snapshot, Timeline
    from .identity import Distinct, Identities, IdentityCandidates
    from .publication import Publication, PublicationRows
    from .reads import Comprehensions, Export, Facets, Overview, Query, Retention, Show, Sql, Status
    from .recall import Block, Recall
    from .registry import OPERATIONS, Answer, Operation, run
    from .review import Check, CheckDocument, Diff, Index
    from .session import Session
    from .time import Contested, Contests, Intervals, periods
    from .values import Binding, Ceiling, Destination, Moment, Page, ProposalBranch, Rev, WorkTree, destination
    from .writes import Comprehend, Correct, Feedback, Flags, Merge, New, Reclassify, Relate, Retract

# name → the module of the door that defines it. The door loads lazily: `obsrepo check` loads
# the review operations and never the reads, the writes, publication or adoption (each module's
# dataclasses cost milliseconds to create, on every command).
_WHERE = {
    "Answer": "registry",
    "Belief": "beliefs",
    "BeliefShown": "beliefs",
    "Binding": "values",
    "Block": "recall",
    "Ceiling": "values",
    "Check": "review",
    "CheckDocument": "review",
    "Comprehend": "writes",
    "Comprehensions": "reads",
    "Contested": "time",
    "Contests": "time",
    "Correct": "writes",
    "Destination": "values",
    "Diff": "review",
    "Distinct": "identity",
    "EmbedInfo": "embedding",
    "EmbedPull": "embedding",
    "Entities": "entities",
    "Export": "reads",
    "Facets": "reads",
    "Feedback": "writes",
    "Find": "entities",
    "Flags": "writes",
    "History": "entities",
    "Identities": "identity",
    "IdentityCandidates": "identity",
    "Index": "review",
    "Init": "adopt",
    "Intervals": "time",
    "Initialized": "adopt",
    "Merge": "writes",
    "Moment": "values",
    "New": "writes",
    "OPERATIONS": "registry",
    "Observations": "entities",
    "Overview": "reads",
    "Operation": "registry",
    "Page": "values",
    "ProposalBranch": "values",
    "Provenance": "entities",
    "Publication": "publication",
    "PublicationRows": "publication",
    "Query": "reads",
    "Recall": "recall",
    "Reclassify": "writes",
    "Relate": "writes",
    "Related": "entities",
    "Relations": "entities",
    "Retention": "reads",
    "Retract": "writes",
    "Rev": "values",
    "Session": "session",
    "Show": "reads",
    "Snapshot": "entities",
    "Sql": "reads",
    "Status": "reads",
    "Timeline": "entities",
    "WorkTree": "values",
    "destination": "values",
    "init": "adopt",
    "periods": "time",
    "run": "registry",
}
_OPERATION_MODULES = ("reads", "entities", "beliefs", "review", "writes", "publication", "embedding", "adopt", "recall", "identity", "time")


def __getattr__(name: str) -> Any:
    if name == "OPERATIONS":  # every operation registered: load every module that defines one
        for defining in _OPERATION_MODULES:
            importlib.import_module(f"{__name__}.{defining}")
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


__all__ = [
    "OPERATIONS", "Answer", "Belief", "BeliefShown", "Binding", "Block", "Ceiling", "Check", "CheckDocument", "Comprehend",
    "Comprehensions", "Contested", "Contests", "Correct",
    "Destination", "Diff", "Distinct", "Identities", "IdentityCandidates", "EmbedInfo", "EmbedPull", "Entities", "Export",
    "Facets", "Feedback", "Find", "History", "Index", "Init",
    "Intervals",
    "Flags", "Initialized", "Merge", "Moment", "New",
    "Observations", "Operation", "Overview", "Page", "ProposalBranch", "Provenance", "Publication", "PublicationRows", "Query",
    "Recall", "Reclassify", "Relate", "Related",
    "Relations", "Retention", "Retract", "Rev", "Session", "Show", "Snapshot", "Sql", "Status", "Timeline", "WorkTree",
    "destination", "init", "periods", "run",
]
