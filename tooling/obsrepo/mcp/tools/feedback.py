"""record_feedback: how an observation served, folded by the index into its weight."""

from __future__ import annotations

from typing import Any

from ...ops import Feedback, Session, run
from ..registry import write_tool


@write_tool(Feedback, "Record feedback", {"target": "observation_id", "outcome": "outcome", "session": "session"})
def record_feedback(session: Session, request: Feedback) -> Any:
    """Record how an observation served (accepted, rejected, rework, misleading): a new
    feedback observation, committed on the server's proposal branch (never the checked-out
    one). Once merged, the index folds it into the observation's weight, which ranks text
    search (w' = w·(1−α) + s·α). The observation must exist and be
    visible to the server's tenant (else REF_NOT_FOUND). Answers {id, path, content_hash,
    commit, branch}."""
    return run(session, request).to_json()
