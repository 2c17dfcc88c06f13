"""What a write is judged against: a tree taken as a change on a kept lookup store.

A new document is judged by the repository rules over every document its writer can see. Reading
a whole tree for that costs seconds and hundreds of megabytes at 100,000 documents, and grows
with the repository; holding a dict of facts per document in a kept-open writer grows with it
too. So, as a pull request's check does (`pull.py`), the tree written on (the work tree, or a
proposal branch's tip) is taken as a change on a commit whose lookup store is kept (the tree's
own commit or one of its first-parent ancestors; built for that commit when none of them has
one): the documents that differ from that commit are read and kept (with those the writer adds
meanwhile), and the rest is asked of the store by what a draft and those documents name. The
answers are those of the rules over the whole tree with the draft added (tests compare them).

A state made for a writer bound to a tenant answers over the documents that tenant can see
(docs/design.md §8a): the store's answers outside that view are dropped, so no refusal tells
of another tenant's documents; ids and paths are global, so a writer keeps clear of every
tenant's (`taken`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..format.analyze import analyze
from ..format.report import Issue
from ..format.rules import Analysis, kind_of
from ..gitstore import Entry, Git
from . import graph
from .analysis import analyze_source
from .cache import AnalysisCache
from .change import Context, Wanted, looked_up
from .check import CheckPlan, plan_source
from .facts import FactsStore
from .lookup import BaseLookup
from .pull import Near, graph_starts, read_change
from .sources import DOCUMENT_ROOTS, REGULAR_MODES, entries, worktree_in_git

ANCESTORS = 8  # first-parent ancestors whose kept lookup store a write may start from
Facts = dict[str, Any]


class NearState:
    """The documents of a tree that differ from a base commit (read, plus those added since),
    and the base's lookup store for the rest (None: nothing committed, every document read).
    The documents read or added are kept by key as the store keeps the rest, so a draft is
    judged on what it names, whichever part holds it: a writer's thousandth write costs what
    its first did."""

    def __init__(self, analyses: dict[str, Analysis], lookup: BaseLookup | None, binding: dict[str, str],
                 holds_path: Callable[[str], bool], read_path: Callable[[str], bytes | None] = lambda _path: None,
                 ) -> None:
        self.lookup = lookup
        self.binding = dict(binding)
        self._holds_path = holds_path  # whether the tree has a file at this path (of the base's too)
        self._read_path = read_path  # a document's bytes in the tree (None: its compact facts serve)
        self.added = _Added()
        for path in sorted(analyses):
            self.added.add(path, analyses[path].facts)
        self.by_id = _ById(self)
        self.hashes = _ByHash(self)

    @classmethod
    def of_worktree(cls, git: Git, binding: dict[str, str] | None = None) -> NearState:
        """The work tree, committed or not, as a change on HEAD (or a kept ancestor)."""
        root = git.root

        def holds(path: str) -> bool:
            return os.path.lexists(os.path.join(root, path))

        def read(path: str) -> bytes | None:
            try:
                with open(os.path.join(root, path), "rb") as handle:
                    return handle.read()
            except OSError:
                return None

        if not git.has_head():  # nothing committed: every document is new
            return cls(analyze_source(worktree_in_git(git), AnalysisCache(None, {}, "")), None, binding or {}, holds, read)
        facts = FactsStore.open(git)
        base, kept = _kept_base(git, "HEAD", facts)
        near = Near(git, base, kept, None)
        source, converted = plan_source(git, CheckPlan(root, False, base, None), near)
        changed = read_change(git, base, source, facts, None, None, near, converted)
        facts.save()
        return cls(changed.analyses, changed.lookup, binding or {}, holds, read)

    @classmethod
    def at_commit(cls, git: Git, tip: str, binding: dict[str, str] | None = None) -> NearState:
        """The tree of commit `tip` as a change on it or a kept ancestor."""
        facts = FactsStore.open(git)
        base, kept = _kept_base(git, tip, facts)
        changes = git.diff(base, tip, "--", *DOCUMENT_ROOTS) if base != tip else []
        gone = {c.path for c in changes if c.status != "A"}
        added = [Entry(c.new_mode, c.new_sha, c.path) for c in changes
                 if c.status != "D" and c.new_mode in REGULAR_MODES and not c.path.endswith("/.gitkeep")]
        analyses = analyze_source(entries(git, added), AnalysisCache(None, {}, ""))
        if kept is not None:
            kept.gone = gone
        lookup = kept or BaseLookup.open(git, base, facts, gone)
        facts.save()

        def holds(path: str) -> bool:
            return bool(git.ls_tree_at(tip, [path]))

        def read(path: str) -> bytes | None:
            return git.run("cat-file", "blob", f"{tip}:{path}", check=False) or None

        return cls(analyses, lookup, binding or {}, holds, read)

    # -- keeping the state --------------------------------------------------------------------
    def add(self, path: str, facts: Facts | None) -> None:
        """A document added to the tree (a file that is not a valid document: its path only)."""
        self.added.add(path, facts)

    # -- asking --------------------------------------------------------------------------------
    def taken(self, doc_id: str, path: str) -> bool:
        """Whether a document of the tree, in any tenant's view, holds this id, or a file this path."""
        lookup, added = self.lookup, self.added
        return doc_id in added.by_id or path in added.facts or (lookup is not None and lookup.holds(doc_id)) \
            or self._holds_path(path)

    def problems(self, path: str, facts: Facts) -> list[Issue]:
        """What the repository rules over what the binding can see report at `path` once the valid
        document `facts` is added there (a path not in the tree)."""
        draft = {path: Analysis(kind_of(path), [], facts)}
        everything = dict(draft)
        for found, facts_of in looked_up([(path, facts)], self._context(draft), {path}):
            everything.setdefault(found, Analysis(kind_of(found), [], facts_of))
        return [i for i in graph.repository_rules(everything, added={path}, change={path}) if i.path == path]

    def observations(self, column: str, key: str) -> list[tuple[str, Facts]]:
        """The observations the binding can see whose `column` (id, hash) is `key`, by path:
        those of the base's store first, then those read or added."""
        found = self.lookup.having(column, key) if self.lookup is not None else []
        index = self.added.by_id if column == "id" else self.added.by_hash
        found += [(p, self.added.facts[p]) for p in sorted(index.get(key, ()))]  # type: ignore[misc]
        return [(p, f) for p, f in found if f["kind"] == "observation" and graph.in_sight(f, self.binding)]

    def _context(self, draft: dict[str, Analysis]) -> Context:
        lookup, added, binding = self.lookup, self.added, self.binding

        def context(asked: Wanted, leave_out: set[str]) -> list[tuple[str, dict[str, Any]]]:
            # of each relation graph the draft adds to, what its new edges reach, in either part
            stored, read = self._reached(graph_starts(draft, asked.graph_types)) if asked.graph_types else (set(), set())
            found = [] if lookup is None else \
                lookup.matching(asked.ids, asked.hashes, asked.entities, asked.relation_targets, stored, leave_out)
            found += added.matching(asked, read, leave_out)
            return [(p, f) for p, f in found if graph.in_sight(f, binding)]

        return context

    def _reached(self, starts: dict[str, set[str]]) -> tuple[set[str], set[str]]:
        """The documents (of the store, of those read or added) whose edges a walk from each
        relation type's `starts` follows, through both parts."""
        stored: set[str] = set()
        read: set[str] = set()
        for kind, entities in starts.items():
            seen, todo = set(entities), sorted(entities)
            while todo:
                entity = todo.pop()
                steps = [(target, path, stored) for target, path in
                         (self.lookup.steps(kind, entity) if self.lookup is not None else [])]
                steps += [(target, path, read) for target, path in self.added.edges.get((kind, entity), ())]
                for target, path, part in steps:
                    part.add(path)
                    if target not in seen:
                        seen.add(target)
                        todo.append(target)
        return stored, read


class _Added:
    """The documents read or added, by path and by the keys the rules look up (as the lookup
    store keeps the rest)."""

    def __init__(self) -> None:
        self.facts: dict[str, Facts | None] = {}  # every path, None for a file that is no valid document
        self.by_id: dict[str, set[str]] = {}
        self.by_hash: dict[str, set[str]] = {}
        self.by_entity: dict[str, set[str]] = {}
        self.relating: dict[str, set[str]] = {}  # target entity → paths of documents with a relation to it
        self.edges: dict[tuple[str, str], list[tuple[str, str]]] = {}  # (type, entity) → [(target, path)]
        self.retracting: set[str] = set()

    def add(self, path: str, facts: Facts | None) -> None:
        self.facts[path] = facts
        if facts is None:
            return
        self.by_id.setdefault(facts["id"], set()).add(path)
        if facts["kind"] != "observation":
            return
        self.by_hash.setdefault(facts["hash"], set()).add(path)
        if facts["entity"]:
            self.by_entity.setdefault(facts["entity"], set()).add(path)
        if facts["retracts"]:
            self.retracting.add(path)
        for kind, target in facts["relations"]:
            self.relating.setdefault(target, set()).add(path)
            self.edges.setdefault((kind, facts["entity"]), []).append((target, path))

    def matching(self, asked: Wanted, paths: set[str], leave_out: set[str]) -> list[tuple[str, Facts]]:
        """What `BaseLookup.matching` gives of the store, of these documents."""
        found = set(paths) | self.retracting
        for index, keys in ((self.by_id, asked.ids), (self.by_hash, asked.hashes), (self.by_entity, asked.entities),
                            (self.relating, asked.relation_targets)):
            for key in keys:
                found |= index.get(key, set())
        return [(path, self.facts[path]) for path in sorted(found - leave_out)  # type: ignore[misc]
                if self.facts[path] is not None]


class _ById:
    """An observation's facts by id, among those the binding can see (the first by path)."""

    def __init__(self, state: NearState) -> None:
        self._state = state

    def get(self, obs_id: str, default: Facts | None = None) -> Facts | None:
        """Its facts as `analyze` gives them (a document of the base's store is read again: the
        store keeps only what the rules read)."""
        found = self._state.observations("id", obs_id)
        if not found:
            return default
        path, facts = found[0]
        data = None if path in self._state.added.facts else self._state._read_path(path)
        whole = analyze(path, data).facts if data is not None else None
        return whole if whole is not None and whole["id"] == obs_id else facts

    def __contains__(self, obs_id: object) -> bool:
        return isinstance(obs_id, str) and self.get(obs_id) is not None

    def __getitem__(self, obs_id: str) -> Facts:
        found = self.get(obs_id)
        if found is None:
            raise KeyError(obs_id)
        return found


class _ByHash:
    """The path of an observation the binding can see by content hash (the first by path)."""

    def __init__(self, state: NearState) -> None:
        self._state = state

    def __getitem__(self, digest: str) -> str:
        found = self._state.observations("hash", digest)
        if not found:
            raise KeyError(digest)
        return found[0][0]


def _kept_base(git: Git, tip: str, facts: FactsStore) -> tuple[str, BaseLookup | None]:
    """The nearest first-parent ancestor of `tip` (itself first) whose lookup store is kept, with
    that store; else `tip` and None (its store is then built)."""
    lines = git.run("log", "--first-parent", f"-n{ANCESTORS}", "--format=%H %T", tip, "--").decode().split()
    commits = list(zip(lines[0::2], lines[1::2]))
    for sha, tree in commits:
        kept = BaseLookup.kept_tree(tree, facts, git)
        if kept is not None:
            return sha, kept
    return commits[0][0], None


__all__ = ["NearState"]
