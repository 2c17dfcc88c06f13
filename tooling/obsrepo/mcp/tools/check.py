"""check_document: is this document acceptable here, before anyone writes it?"""

from __future__ import annotations

from typing import Any

from ...ops import CheckDocument, Session, run
from ..registry import read_tool


@read_tool(CheckDocument, "Check a document", {"text": "text"})
def check_document(session: Session, request: CheckDocument) -> Any:
    """Check one whole observation/v1 or comprehension/v1 document against the repository at
    the tip served, as `obsrepo check` would if it were added there: the per-document rules
    (YAML, schema, id, bounds) and the repository rules (unique ids and content, references,
    relation targets, cycles, merges, citations). Nothing is written. Answers with `check`'s
    JSON for it: {ok, checked, issues: [{path, line, col, code, rule, message, severity}]},
    the path being where the document would live."""
    return run(session, request).to_json()
