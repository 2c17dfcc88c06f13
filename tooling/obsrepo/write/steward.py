"""Stewardship documents (docs/design.md §14): feedback on an observation, and raising the
classification of observations. Each is one new observation file in the work tree, written
like `new` (validated exactly as `check` would, never overwriting anything)."""

from __future__ import annotations

from typing import Any

from ..errors import NotFoundError, UsageError
from ..format.vocabulary import CLASSIFICATIONS, FEEDBACK_OUTCOMES
from ..gate.cache import AnalysisCache
from ..gate.check import analyze_source
from ..gate.graph import visible
from ..gate.sources import worktree
from ..gitstore import Git
from .new import Created, create

DEFAULT_SOURCE = "human/cli"


def _observations(root: str) -> dict[str, dict[str, Any]]:
    """id → facts of every valid observation in the work tree (committed or not)."""
    git = Git.discover(root)
    cache = AnalysisCache.open(git)
    analyses = analyze_source(worktree(root), cache)
    cache.save()
    return {a.facts["id"]: {**a.facts, "path": path} for path, a in analyses.items()
            if a.facts is not None and a.facts["kind"] == "observation"}


def _target(known: dict[str, dict[str, Any]], obs_id: str, tenant: dict[str, str]) -> dict[str, Any]:
    facts = known.get(obs_id)
    if facts is None or not visible(facts["tenant"], tenant):  # another tenant's reads as missing
        raise NotFoundError(f"observation '{obs_id}' does not exist", code="REF_NOT_FOUND", observation=obs_id)
    return facts


def feedback(root: str, target: str, outcome: str, *, session: str | None = None, source: str = DEFAULT_SOURCE,
             tenant: dict[str, str] | None = None, timestamp: str | None = None) -> Created:
    """A feedback observation on `target`; its tenant is the caller's binding, else the target's."""
    if outcome not in FEEDBACK_OUTCOMES:
        raise UsageError(f"--outcome is one of {', '.join(FEEDBACK_OUTCOMES)}", parameter="--outcome")
    facts = _target(_observations(root), target, tenant or {})
    front: dict[str, Any] = {
        "source": source, "event": f"Feedback on {target}: {outcome}", "type": "feedback",
        "feedback": {"target": target, "outcome": outcome, **({"session": session} if session else {})},
    }
    if timestamp:
        front["timestamp"] = timestamp
    owner = dict(tenant) if tenant else facts["tenant"]
    if owner:
        front["tenant"] = owner
    return create(root, front)


def reclassify(root: str, targets: list[str], classification: str, *, source: str = DEFAULT_SOURCE,
               tenant: dict[str, str] | None = None, reason: str | None = None, timestamp: str | None = None) -> Created:
    """A reclassify observation raising `targets` to `classification` (all of one tenant mapping)."""
    if classification not in CLASSIFICATIONS:
        raise UsageError(f"--to is one of {', '.join(CLASSIFICATIONS)}", parameter="--to")
    if not targets:
        raise UsageError("name at least one observation", parameter="IDS")
    known = _observations(root)
    owners = {tuple(sorted(_target(known, t, tenant or {})["tenant"].items())) for t in targets}
    if len(owners) > 1:
        raise UsageError("the observations belong to different tenants: reclassify each tenant's separately",
                         parameter="IDS")
    owner = dict(next(iter(owners)))
    front: dict[str, Any] = {
        "source": source, "event": f"Reclassified {len(targets)} observation{'s' if len(targets) > 1 else ''} as {classification}",
        "type": "reclassify", "reclassify": {"targets": list(targets), "classification": classification},
    }
    if timestamp:
        front["timestamp"] = timestamp
    if owner:
        front["tenant"] = owner
    return create(root, front, reason or "")
