"""update_comprehension: a belief (comprehension document) after one more observation."""

from __future__ import annotations

from typing import Any

from ...ops import Comprehend, Session, run
from ..registry import write_tool


@write_tool(Comprehend, "Update a comprehension", {"comprehension_id": "comprehension_id", "observation": "observation_id",
                                                    "effect": "effect", "statement": "statement", "reasoning": "reasoning"})
def update_comprehension(session: Session, request: Comprehend) -> Any:
    """Write the next version of a comprehension document after one more observation, as one
    commit on the server's proposal branch (from the version at its tip). The observation is
    cited, `version` raised, and the confidence moves one step: unknown→low on confirm or
    contradict, low→medium and medium→high on confirm, medium→low and high→medium on
    contradict, otherwise unchanged. A contradiction needs `statement`. Nothing is committed
    when the observation is already cited (`changed` false, `commit` null). Answers {id, path,
    version, previous_confidence, confidence, changed, commit, branch}."""
    return run(session, request).to_json()
