"""Belief updates (docs/design.md §14): the next version of a comprehension document in the
work tree, after one more observation confirmed it, contradicted it or left it as it was.

A comprehension document is the one kind of document that may be edited in place: the new
version raises `version`, sets `updated`, cites the observation (in `observations` and in
`posterior.observations_used`) and never drops a cited id, so `check --base` accepts it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..errors import InputError, NotFoundError, UsageError
from ..format import emit
from ..format.analyze import analyze
from ..format.document import read_document
from ..format.model import COMPREHENSION_ID, format_timestamp
from ..format.vocabulary import COMPREHENSION_DIR
from .steward import _observations, _target

EFFECTS = ("confirm", "contradict", "neutral")
# (confidence, effect) → the posterior confidence; every other pair leaves it unchanged
TRANSITIONS = {
    ("unknown", "confirm"): "low",
    ("unknown", "contradict"): "low",
    ("low", "confirm"): "medium",
    ("medium", "confirm"): "high",
    ("medium", "contradict"): "low",
    ("high", "contradict"): "medium",
}


def next_confidence(confidence: str, effect: str) -> str:
    return TRANSITIONS.get((confidence, effect), confidence)


@dataclass(frozen=True)
class Updated:
    id: str
    path: str
    version: int
    previous_confidence: str
    confidence: str
    changed: bool  # False: the observation was already cited, nothing was written

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "version": self.version,
                "previous_confidence": self.previous_confidence, "confidence": self.confidence, "changed": self.changed}


def comprehend(root: str, comp_id: str, observation: str, effect: str, *, statement: str | None = None,
               reasoning: str | None = None, tenant: dict[str, str] | None = None, now: datetime | None = None) -> Updated:
    import re

    if effect not in EFFECTS:
        raise UsageError(f"--effect is one of {', '.join(EFFECTS)}", parameter="--effect")
    if effect == "contradict" and not statement:
        raise UsageError("a contradicting observation needs the new belief: give --statement", parameter="--statement")
    if not re.fullmatch(COMPREHENSION_ID, comp_id):
        raise UsageError(f"'{comp_id}' is not a comprehension id (comp-…)", parameter="COMP_ID")
    path = f"{COMPREHENSION_DIR}{comp_id}.md"
    full = os.path.join(root, path)
    try:
        with open(full, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise NotFoundError(f"comprehension '{comp_id}' does not exist ({path})", code="REF_NOT_FOUND",
                            comprehension=comp_id) from None
    analysis = analyze(path, data)
    if analysis.issues:
        first = analysis.issues[0]
        raise InputError(f"{path} is not a valid comprehension document: {first.message}", code=first.code,
                         issues=[i.as_dict() for i in analysis.issues])
    doc = read_document(path, data)
    front: dict[str, Any] = dict(doc.front or {})
    posterior = dict(front["posterior"])
    old = posterior["confidence"]
    version = int(front.get("version", 1))
    if observation in front["observations"]:
        return Updated(comp_id, path, version, old, old, False)
    facts = _target(_observations(root), observation, tenant or {})
    obs_type = _type_of(root, facts["path"])
    new = next_confidence(old, effect)
    moment = (now or datetime.now(timezone.utc)).replace(microsecond=0)
    front["version"] = version + 1
    front["updated"] = format_timestamp(moment)
    front["observations"] = [*front["observations"], observation]
    posterior.update(
        statement=statement or posterior["statement"], confidence=new,
        update_reasoning=reasoning or f"Observation {observation} ({obs_type}) changed confidence from {old} to {new}",
        observations_used=[*posterior["observations_used"], observation])
    front["posterior"] = posterior
    text = emit.document(front, doc.body.lstrip("\n"), as_given=True).encode("utf-8")
    check = analyze(path, text)
    if check.issues:
        raise InputError(f"the new version would not be valid: {check.issues[0].message}", code=check.issues[0].code,
                         issues=[i.as_dict() for i in check.issues])
    with open(full, "wb") as handle:
        handle.write(text)
    return Updated(comp_id, path, version + 1, old, new, True)


def _type_of(root: str, path: str) -> str:
    with open(os.path.join(root, path), "rb") as handle:
        front = read_document(path, handle.read()).front or {}
    kind = front.get("type")
    return kind if isinstance(kind, str) else "untyped"
