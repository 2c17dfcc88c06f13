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

from .adopt import Init, Initialized, init
from .embedding import EmbedInfo, EmbedPull
from .publication import Publication, PublicationRows
from .reads import (
    Comprehensions,
    Entities,
    Export,
    Find,
    History,
    Observations,
    Provenance,
    Query,
    Related,
    Relations,
    Retention,
    Show,
    Snapshot,
    Sql,
    Status,
    Timeline,
)
from .registry import OPERATIONS, Answer, Operation, run
from .review import Check, CheckDocument, Diff, Index
from .session import Session
from .values import Binding, Ceiling, Destination, Moment, Page, ProposalBranch, Rev, WorkTree, destination
from .writes import Comprehend, Correct, Feedback, Merge, New, Reclassify, Relate, Retract

__all__ = [
    "OPERATIONS", "Answer", "Binding", "Ceiling", "Check", "CheckDocument", "Comprehend", "Comprehensions", "Correct",
    "Destination", "Diff", "EmbedInfo", "EmbedPull", "Entities", "Export", "Feedback", "Find", "History", "Index", "Init",
    "Initialized", "Merge", "Moment", "New",
    "Observations", "Operation", "Page", "ProposalBranch", "Provenance", "Publication", "PublicationRows", "Query",
    "Reclassify", "Relate", "Related",
    "Relations", "Retention", "Retract", "Rev", "Session", "Show", "Snapshot", "Sql", "Status", "Timeline", "WorkTree",
    "destination", "init", "run",
]
