"""The repository rules for one added observation, answered from a kept state of the tree.

`graph.repository_rules` reads every document's facts; run on 100,000 documents for each
write it costs seconds. A writer that adds one file at a time keeps a `RuleState` of the tree
it writes on (ids, content hashes, entities and their tenants, live relations, merges) and
asks `problems` what the new document would break. On a tree that passes the repository
rules, `problems(path, facts)` is empty exactly when the full rules pass on the tree with the
document added (a property test holds it to `repository_rules`). Where the tree already has
problems of its own, the answer is at least as strict: a write inside an existing relation
cycle is refused, even when the full rules would report that cycle at another document.

A state made for a writer bound to a tenant keeps the facts of the documents that tenant can
see, and only the paths and ids of the others (docs/design.md §8a): its answers are the full
rules over what the writer sees, so none of them tells of another tenant's documents; ids
and paths are global, so a writer can still keep clear of them (`taken`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import errors
from ..format.report import Issue
from ..format.rules import ACYCLIC_RELATIONS, Analysis
from .graph import in_sight
from .judge import judge, visible
from .judge import loc as _loc

Facts = dict[str, Any]
GRAPH_TYPES = (*ACYCLIC_RELATIONS, "DUPLICATE_OF")


class RuleState:
    """What the repository rules know of a tree's observations, kept up to date one file at a
    time; the lookup rules ask it as they ask every state (`judge.Facts`)."""

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
        # entity → ids of live observations about it (for relation targets and their tenants)
        self.about: dict[str, set[str]] = {}
        # (type, source entity) → {target entity: count of live edges}
        self.edges: dict[str, dict[str, dict[str, int]]] = {t: {} for t in GRAPH_TYPES}
        # target entity → ids of live observations that relate to it
        self.pointing_at: dict[str, set[str]] = {}

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
            self.about.setdefault(facts["entity"], set()).add(facts["id"])
        for rel_type, target in facts["relations"]:
            self.pointing_at.setdefault(target, set()).add(facts["id"])
            if rel_type in self.edges:
                targets = self.edges[rel_type].setdefault(facts["entity"], {})
                targets[target] = targets.get(target, 0) + 1

    def _leave(self, facts: Facts) -> None:
        del self.live[facts["id"]]
        if facts["entity"]:
            self.about.get(facts["entity"], set()).discard(facts["id"])
        for rel_type, target in facts["relations"]:
            self.pointing_at.get(target, set()).discard(facts["id"])
            if rel_type in self.edges:
                targets = self.edges[rel_type][facts["entity"]]
                targets[target] -= 1
                if not targets[target]:
                    del targets[target]

    # -- asking -------------------------------------------------------------------------------
    def holder(self, doc_id: str) -> str | None:
        return self.where.get(doc_id)

    def recorded(self, digest: str) -> str | None:
        return self.hashes.get(digest)

    def observation(self, obs_id: str) -> Facts | None:
        return self.by_id.get(obs_id)

    def taken(self, doc_id: str, path: str) -> bool:
        """Whether a document of the tree, in view or not, already holds this id or path."""
        return doc_id in self.ids or path in self.paths

    def problems(self, path: str, facts: Facts) -> list[Issue]:
        """What the repository rules would report once `facts` (a valid observation at `path`,
        a path not in the tree) is added."""
        issues = judge(path, facts, self)
        if issues:
            return issues

        doc_id = facts["id"]
        withdrawn = {t for t in facts["retracts"] if t in self.live}
        alive = doc_id not in self.retract_targets
        if alive:
            issues += self._own_relations(path, facts, withdrawn)
        issues += self._orphans(path, facts, withdrawn, alive)
        return issues

    def _entity_ids(self, entity: str, withdrawn: set[str]) -> Iterable[Facts]:
        for obs_id in self.about.get(entity, ()):
            if obs_id not in withdrawn:
                yield self.live[obs_id]

    def _own_relations(self, path: str, facts: Facts, withdrawn: set[str]) -> list[Issue]:
        issues = []
        source = facts["entity"]
        for index, (rel_type, target) in enumerate(facts["relations"]):
            line, col = _loc(facts, "relations", index)
            exists = (target == source) or any(visible(f["tenant"], facts["tenant"])
                                               for f in self._entity_ids(target, withdrawn))
            if not exists:
                issues.append(Issue(path, line, col, errors.ENTITY_NOT_FOUND, "relation-target",
                                    f"{rel_type} target '{target}' is not the entity of any observation in this tenant"))
            if rel_type not in self.edges:
                continue
            # earlier relations of this same document count as edges already
            own = [t for k, t in facts["relations"][:index] if k == rel_type]
            if target == source or self._reaches(rel_type, target, source, withdrawn, own, source):
                issues.append(Issue(path, line, col, errors.CYCLE_DETECTED, "relation-cycle",
                                    f"{rel_type} {source} → {target} closes a cycle"))
            elif rel_type == "DUPLICATE_OF" and (own or self._merged_already(source, withdrawn)):
                issues.append(Issue(path, line, col, errors.ENTITY_ALREADY_MERGED, "merged-twice",
                                    f"{source} was already merged into another entity"))
        return issues

    def _live_targets(self, rel_type: str, node: str, withdrawn: set[str]) -> Iterable[str]:
        targets = self.edges[rel_type].get(node, {})
        if not withdrawn:
            yield from targets
            return
        for target in targets:
            # an edge counts while one live, not withdrawn observation still carries it
            if any(self.live[i]["entity"] == node and [rel_type, target] in self.live[i]["relations"]
                   for i in self.pointing_at.get(target, ()) if i not in withdrawn):
                yield target

    def _reaches(self, rel_type: str, start: str, goal: str, withdrawn: set[str], own: list[str], own_source: str) -> bool:
        seen = {start}
        todo = [start]
        while todo:
            node = todo.pop()
            nexts = list(self._live_targets(rel_type, node, withdrawn))
            if node == own_source:
                nexts += own
            for child in nexts:
                if child == goal:
                    return True
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        return False

    def _merged_already(self, source: str, withdrawn: set[str]) -> bool:
        return any(True for _ in self._live_targets("DUPLICATE_OF", source, withdrawn))

    def _orphans(self, path: str, facts: Facts, withdrawn: set[str], alive: bool) -> list[Issue]:
        """Relations of other observations whose target would be left without an observation
        visible to them once `withdrawn` are retracted."""
        issues = []
        entities = {self.live[i]["entity"] for i in withdrawn if self.live[i]["entity"]}
        for entity in sorted(entities):
            remaining = list(self._entity_ids(entity, withdrawn))
            if alive and facts["entity"] == entity:
                remaining.append(facts)
            for obs_id in sorted(self.pointing_at.get(entity, ())):
                other = self.live[obs_id]
                if obs_id in withdrawn or other["entity"] == entity:
                    continue
                if not any(visible(f["tenant"], other["tenant"]) for f in remaining):
                    line, col = _loc(facts, "retracts")
                    issues.append(Issue(path, line, col, errors.ENTITY_NOT_FOUND, "relation-target",
                                        f"retracting would leave the relation of {obs_id} to '{entity}' "
                                        "without a target in its tenant"))
                    break
        return issues
