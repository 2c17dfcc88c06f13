"""update_comprehension: a belief (comprehension document) after one more observation."""

from __future__ import annotations

from typing import Any

from ..registry import text, write_tool
from .feedback import OBSERVATION_ID


@write_tool("Update a comprehension", {
    "comprehension_id": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^comp-[a-z0-9]+(-[a-z0-9]+)*$",
                         "description": "The comprehension document's id (comp-…)."},
    "observation_id": OBSERVATION_ID,
    "effect": {"type": "string", "enum": ["confirm", "contradict", "neutral"],
               "description": "What the observation does to the belief."},
    "statement": text("The belief as it now stands (required to contradict).", 2000),
    "reasoning": text("Why (default: which observation changed the confidence, from what to what).", 2000),
}, required=("comprehension_id", "observation_id", "effect"))
def update_comprehension(repo: Any, comprehension_id: str, observation_id: str, effect: str,
                         statement: str | None = None, reasoning: str | None = None) -> Any:
    """Write the next version of a comprehension document after one more observation, as one
    commit on the server's proposal branch (from the version at its tip). The observation is
    cited, `version` raised, and the confidence moves one step: unknown→low on confirm or
    contradict, low→medium and medium→high on confirm, medium→low and high→medium on
    contradict, otherwise unchanged. A contradiction needs `statement`. Nothing is committed
    when the observation is already cited (`changed` false, `commit` null). Answers {id, path,
    version, previous_confidence, confidence, changed, commit, branch}."""
    return repo.comprehend(comprehension_id, observation_id, effect, statement=statement, reasoning=reasoning,
                           commit=True)
