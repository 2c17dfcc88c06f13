"""The repository rules for one added observation, answered from a kept state of the tree.

`graph.repository_rules` reads every document's facts; run on 100,000 documents for each
write it costs seconds. A writer that adds one file at a time keeps a `RuleState` of the tree
it writes on (ids, content hashes, the live observations of each entity and those relating to
it) and asks `problems` what the new document would break: the same rules `check` applies
(`judge.judge`, `graph.graph_rules`), asked of this state through the judge's `Facts`. On a
tree that passes the repository rules, `problems(path, facts)` is empty exactly when the full
rules pass on the tree with the document added (a property test holds it to
`repository_rules`). Where the tree already has problems of its own, the answer is at least as
strict: a write inside an existing relation cycle is refused, even when the full rules would
report that cycle at another document.

A state made for a writer bound to a tenant keeps the facts of the documents that tenant can
see, and only the paths and ids of the others (docs/design.md §8a): its answers are the full
rules over what the writer sees, so none of them tells of another tenant's documents; ids
and paths are global, so a writer can still keep clear of them (`taken`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..format.report import Issue
from ..format.rules import Analysis
from .graph import graph_rules, in_sight
from .judge import Layered, TreeFacts, judge

Facts = dict[str, Any]


class RuleState:
    """What the repository rules know of a tree's observations, kept up to date one file at a
    time; the rules ask it as they ask every state (`judge.Facts`)."""

    id_taken = "id '{id}' is already used by another observation"
    content_taken = "the same content (in the same tenant) is already recorded in {path}"

    def __init__(self, binding: dict[str, str] | None = None) -> None:
        self.binding = dict(binding or {})
        self.paths: set[str] = set()  # every document's path, in view or not
        self.ids: set[str] = set()  # every valid document's id, in view or not
        self.by_id: dict[str, Facts] = {}
        self.where: dict[str, str] = {}  # id → path of the observation in `by_id`
        self.hashes: dict[str, str] = {}  # content hash → path
        self.retract_targets: set[str] = set()  # every id any observation retracts (resolved or not)
        self.live: dict[str, Facts] = {}  # id → facts of observations not retracted
        self.entities: dict[str, set[str]] = {}  # entity → ids of live observations about it
        self.pointing_at: dict[str, set[str]] = {}  # target entity → ids of live observations relating to it

    @classmethod
    def of(cls, analyses: dict[str, Analysis], binding: dict[str, str] | None = None) -> RuleState:
        state = cls(binding)
        for path in sorted(analyses):
            state.add(path, analyses[path].facts)
        return state

    # -- keeping the state --------------------------------------------------------------------
    def add(self, path: str, facts: Facts | None) -> None:
        """Record a document of the tree (invalid ones only take their path; those out of the
        binding's sight their path and id)."""
        self.paths.add(path)
        if facts is None:
            return
        self.ids.add(facts["id"])
        if facts["kind"] != "observation" or not in_sight(facts, self.binding):
            return
        if self.by_id.setdefault(facts["id"], facts) is facts:
            self.where[facts["id"]] = path
        self.hashes.setdefault(facts["hash"], path)
        for target in facts["retracts"]:
            self.retract_targets.add(target)
            hit = self.live.get(target)
            if hit is not None:
                self._leave(hit)
        if facts["id"] not in self.retract_targets and facts["id"] not in self.live:
            self._join(facts)

    def _join(self, facts: Facts) -> None:
        self.live[facts["id"]] = facts
        if facts["entity"]:
            self.entities.setdefault(facts["entity"], set()).add(facts["id"])
        for _rel_type, target in facts["relations"]:
            self.pointing_at.setdefault(target, set()).add(facts["id"])

    def _leave(self, facts: Facts) -> None:
        del self.live[facts["id"]]
        if facts["entity"]:
            self.entities.get(facts["entity"], set()).discard(facts["id"])
        for _rel_type, target in facts["relations"]:
            self.pointing_at.get(target, set()).discard(facts["id"])

    # -- asking (judge.Facts) -----------------------------------------------------------------
    def holder(self, doc_id: str) -> str | None:
        return self.where.get(doc_id)

    def recorded(self, digest: str) -> str | None:
        return self.hashes.get(digest)

    def observation(self, obs_id: str) -> Facts | None:
        return self.by_id.get(obs_id)

    def withdrawn(self, obs_id: str) -> bool:
        return obs_id in self.retract_targets

    def about(self, entity: str) -> Iterable[Facts]:
        return [self.live[i] for i in self.entities.get(entity, ())]

    def referring(self, entity: str) -> Iterable[Facts]:
        return [self.live[i] for i in self.pointing_at.get(entity, ())]

    def taken(self, doc_id: str, path: str) -> bool:
        """Whether a document of the tree, in view or not, already holds this id or path."""
        return doc_id in self.ids or path in self.paths

    def problems(self, path: str, facts: Facts) -> list[Issue]:
        """What the repository rules would report once `facts` (a valid observation at `path`,
        a path not in the tree) is added."""
        change = [(path, facts)]
        return judge(path, facts, self) + graph_rules(change, Layered(TreeFacts(change), self))
