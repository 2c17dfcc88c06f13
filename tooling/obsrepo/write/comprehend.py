"""Belief updates (docs/design.md §14): the next version of a comprehension document, after one
more observation confirmed it, contradicted it or left it as it was; written into the work tree,
or committed on a proposal branch (docs/design.md §11).

A comprehension document is the one kind of document that may be edited in place: the new
version raises `version`, sets `updated`, cites the observation (in `observations` and in
`posterior.observations_used`) and never drops a cited id, so `check --base` accepts it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..errors import InputError, NotFoundError, UsageError
from ..files import write_replacing
from ..format import emit
from ..format.analyze import analyze
from ..format.document import read_document
from ..format.model import COMPREHENSION_ID, format_timestamp
from ..format.report import Issue
from ..format.vocabulary import COMPREHENSION_DIR, COMPREHENSION_EFFECTS
from ..gate.graph import visible
from ..gate.immutability import comprehension_edit
from ..gate.near import NearState
from ..gitstore import Git
from .proposal import TreeStates, branch_name, propose_edit
from .statements import target_tenant

EFFECTS = COMPREHENSION_EFFECTS
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


@dataclass(frozen=True)
class Belief:
    """What the caller asks: `observation` bears on comprehension `comp_id` with `effect`."""

    comp_id: str
    observation: str
    effect: str
    statement: str | None = None
    reasoning: str | None = None

    @property
    def path(self) -> str:
        return f"{COMPREHENSION_DIR}{self.comp_id}.md"

    def check(self) -> None:
        if self.effect not in EFFECTS:
            raise UsageError(f"effect is one of {', '.join(EFFECTS)}", parameter="effect")
        if self.effect == "contradict" and not self.statement:
            raise UsageError("statement: a contradicting observation needs the new belief", parameter="statement")
        if not re.fullmatch(COMPREHENSION_ID, self.comp_id):
            raise UsageError(f"comprehension_id: '{self.comp_id}' is not a comprehension id (comp-…)",
                             parameter="comprehension_id")

    def missing(self) -> NotFoundError:
        return NotFoundError(f"comprehension '{self.comp_id}' does not exist ({self.path})", code="REF_NOT_FOUND",
                             comprehension=self.comp_id)


def next_version(belief: Belief, data: bytes, state: NearState, tenant: dict[str, str], type_of: Callable[[str], str],
                 now: datetime | None = None) -> tuple[Updated, bytes | None]:
    """The document after `belief`, from its current bytes `data` and the rule state of the tree
    it lives in (the observations it may cite); None as bytes when it already cites the
    observation. `type_of(path)` reads an observation's type. A caller bound to a tenant sees
    a comprehension only when it can see every observation it cites (as `comprehensions` lists)."""
    path = belief.path
    analysis = analyze(path, data)
    if analysis.issues or analysis.facts is None:
        first = analysis.issues[0]
        raise InputError(f"{path} is not a valid comprehension document: {first.message}", code=first.code,
                         issues=[i.as_dict() for i in analysis.issues])
    front: dict[str, Any] = dict(read_document(path, data).front or {})
    if tenant and not all(cited in state.by_id and visible(state.by_id[cited]["tenant"], tenant)
                          for cited in front["observations"]):
        raise belief.missing()
    posterior = dict(front["posterior"])
    old = posterior["confidence"]
    version = int(front.get("version", 1))
    if belief.observation in front["observations"]:
        return Updated(belief.comp_id, path, version, old, old, False), None
    target_tenant(state, belief.observation, tenant)  # REF_NOT_FOUND when missing or invisible
    facts = state.by_id[belief.observation]
    obs_type = type_of(state.hashes[facts["hash"]])
    new = next_confidence(old, belief.effect)
    front["version"] = version + 1
    front["updated"] = format_timestamp((now or datetime.now(timezone.utc)).replace(microsecond=0))
    front["observations"] = [*front["observations"], belief.observation]
    posterior.update(
        statement=belief.statement or posterior["statement"], confidence=new,
        update_reasoning=belief.reasoning or f"Observation {belief.observation} ({obs_type}) changed confidence from {old} to {new}",
        observations_used=[*posterior["observations_used"], belief.observation])
    front["posterior"] = posterior
    text = emit.document(front, read_document(path, data).body.lstrip("\n"), as_given=True).encode("utf-8")
    after = analyze(path, text)
    problems: list[Issue] = list(after.issues)
    if after.facts is not None:  # the rules `check --base` holds an edit to
        problems += comprehension_edit(path, analysis.facts, after.facts)
    if problems:
        raise InputError(f"the new version would not be valid: {problems[0].message}", code=problems[0].code,
                         issues=[i.as_dict() for i in problems])
    return Updated(belief.comp_id, path, version + 1, old, new, True), text


def type_in(front: dict[str, Any] | None) -> str:
    kind = (front or {}).get("type")
    return kind if isinstance(kind, str) else "untyped"


def comprehend(root: str, state: NearState, belief: Belief, *, tenant: dict[str, str] | None = None,
               now: datetime | None = None) -> Updated:
    """Write the next version into the work tree (`state`: the work tree's documents): a
    temporary file renamed over the old version, so a failure leaves the old one as it was."""
    belief.check()
    full = os.path.join(root, belief.path)
    try:
        with open(full, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise belief.missing() from None

    def type_of(path: str) -> str:
        with open(os.path.join(root, path), "rb") as handle:
            return type_in(read_document(path, handle.read()).front)

    updated, text = next_version(belief, data, state, tenant or {}, type_of, now)
    if text is not None:
        write_replacing(full, text)  # the old version stays whole until the rename
    return updated


def comprehend_commit(git: Git, states: TreeStates, belief: Belief, *, tenant: dict[str, str] | None = None,
                      branch: str | None = None, tool: str = "comprehend", now: datetime | None = None) -> dict[str, Any]:
    """Commit the next version on the proposal branch, made from the version at its tip (HEAD's
    when the branch does not exist yet). Already cited there: no commit (`commit` is None)."""
    belief.check()
    branch = branch_name(git, branch)
    result: list[Updated] = []

    def edit(start: str, data: bytes, state: NearState) -> tuple[bytes, str] | None:
        if not data:
            raise belief.missing()

        def type_of(path: str) -> str:
            return type_in(read_document(path, git.run("cat-file", "blob", f"{start}:{path}")).front)

        updated, text = next_version(belief, data, state, tenant or {}, type_of, now)
        result[:] = [updated]
        if text is None:
            return None
        message = (f"{belief.comp_id}: {belief.effect} by {belief.observation}, confidence {updated.previous_confidence} "
                   f"→ {updated.confidence}\n\nObsrepo-Tool: {tool}\nObsrepo-Comprehension: {belief.comp_id}\n"
                   f"Obsrepo-Observation: {belief.observation}\n")
        return text, message

    published = propose_edit(git, states, belief.path, edit, branch=branch, label=f"obsrepo {tool}: {belief.comp_id}")
    return {**result[0].as_dict(), "commit": published[1] if published else None, "branch": branch}
