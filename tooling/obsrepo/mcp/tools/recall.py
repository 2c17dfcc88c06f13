"""recall: the session memory block (docs/design.md §15), as a tool and as the prompt `recall`."""

from __future__ import annotations

from typing import Any

from ...ops import Recall, Session, run
from ..registry import Text, read_tool

FORMAT = {"type": "string", "enum": ["markdown", "json"], "default": "markdown",
          "description": "markdown: the block to read at the start of a session; json: the same facts as one object."}
ARGUMENTS = {"entities": "entity_ids", "scopes": "scope_ids", "text": "text", "budget": "budget", "at": "at", "as_of": "as_of"}


@read_tool(Recall, "Recall: the session memory block", ARGUMENTS, extras={"format": FORMAT})
def recall(session: Session, request: Recall, format: str = "markdown") -> Any:
    """What to know at the start of a session, compiled from the repository at one commit: the
    snapshots of the entities in scope (each field with the observation that decided it), the
    beliefs (comprehension documents) that cite them, then the observations most relevant to
    `text` (else the newest). Every fact line cites `observation-id@commit`; the block stays
    within `budget` tokens (characters / 4) and ends saying how many entities, beliefs and
    observations it left out. The same commit and arguments give the same bytes. `json`
    answers {at_commit, entities, beliefs, observations, omitted} (also as structured content)."""
    block = run(session, request)
    if format == "json":
        return block.to_json()
    return Text(block.markdown)
