"""record_feedback: how an observation served, folded by the index into its weight."""

from __future__ import annotations

from typing import Any

from ...format.vocabulary import FEEDBACK_OUTCOMES
from ..registry import text, write_tool

OBSERVATION_ID = text("An observation id (obs-…).", 128)


@write_tool("Record feedback", {
    "observation_id": OBSERVATION_ID,
    "outcome": {"type": "string", "enum": list(FEEDBACK_OUTCOMES),
                "description": "accepted raises the observation's weight; rejected, rework and misleading lower it."},
    "session": text("The session the outcome comes from (kept in the weight's history).", 256),
}, required=("observation_id", "outcome"))
def record_feedback(repo: Any, observation_id: str, outcome: str, session: str | None = None) -> Any:
    """Record how an observation served (accepted, rejected, rework, misleading): a new
    feedback observation, committed on the server's proposal branch (never the checked-out
    one). Once merged, the index folds it into the observation's weight, which ranks text
    search (w' = w·(1−α) + s·α). The observation must exist and be
    visible to the server's tenant (else REF_NOT_FOUND). Answers {id, path, content_hash,
    commit, branch}."""
    return repo.feedback(observation_id, outcome, session=session, commit=True)
