"""check_document: is this document acceptable here, before anyone writes it?"""

from __future__ import annotations

from typing import Any

from ..registry import read_tool, text

MAX_DOCUMENT = 2 * 1024 * 1024  # characters; the per-document rules refuse more than 1 MiB


@read_tool("Check a document", {
    "text": text("The whole document: front matter between --- lines, then the Markdown body.", MAX_DOCUMENT),
}, required=("text",))
def check_document(repo: Any, text: str) -> Any:
    """Check one whole observation/v1 or comprehension/v1 document against the repository at
    the tip served, as `obsrepo check` would if it were added there: the per-document rules
    (YAML, schema, id, bounds) and the repository rules (unique ids and content, references,
    relation targets, cycles, merges, citations). Nothing is written. Answers with `check`'s
    JSON for it: {ok, checked, issues: [{path, line, col, code, rule, message, severity}]},
    the path being where the document would live."""
    return repo.check_document(text)
