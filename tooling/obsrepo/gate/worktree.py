"""The work tree as a change on HEAD: what a single write is judged against (`obsrepo new`).

A new document is judged by the repository rules over every document its writer can see. Reading
the whole work tree for that costs seconds and hundreds of megabytes at 100,000 documents, and
grows with the repository. So, as a pull request's check does (`pull.py`), the work tree is
taken as a change on a commit whose lookup store is kept (HEAD, or one of its first-parent
ancestors; built for HEAD when none is): the documents whose blob differs from that commit's are
read, and the rest is asked of the store by what the draft and those documents name. The answer
is the one the rules give over the whole work tree with the draft added.
"""

from __future__ import annotations

import os
from typing import Any

from ..format.report import Issue
from ..format.rules import Analysis, kind_of
from ..gitstore import Git
from . import graph
from .analysis import analyze_source
from .cache import AnalysisCache
from .change import Context, Wanted, looked_up
from .check import CheckPlan, plan_source
from .facts import FactsStore
from .lookup import BaseLookup
from .pull import Near, _graph_starts, _read_change
from .sources import worktree_in_git

ANCESTORS = 8  # first-parent ancestors of HEAD whose kept lookup store a write may start from


class WorkTree:
    """The work tree's documents that differ from a base commit (read), and the base's lookup
    store for the rest (None: there is no commit yet, every document was read)."""

    def __init__(self, root: str, analyses: dict[str, Analysis], lookup: BaseLookup | None) -> None:
        self.root, self.analyses, self.lookup = root, analyses, lookup
        self.ids = {a.facts["id"] for a in analyses.values() if a.facts is not None}

    @classmethod
    def open(cls, git: Git) -> WorkTree:
        if not git.has_head():  # nothing committed: every document is new
            source = worktree_in_git(git)
            return cls(git.root, analyze_source(source, AnalysisCache(None, {}, "")), None)
        facts = FactsStore.open(git)
        base = _kept_base(git, facts)
        near = Near.open(git, base, facts, None)
        source, converted = plan_source(git, CheckPlan(git.root, False, base, None), near)
        read = _read_change(git, base, source, facts, None, None, near, converted)
        facts.save()
        return cls(git.root, read.analyses, read.lookup)

    def taken(self, doc_id: str, path: str) -> bool:
        """Whether a document of the work tree, in any tenant's view, holds this id, or a file
        this path (ids and paths are global: a writer keeps clear of every tenant's)."""
        return doc_id in self.ids or path in self.analyses or os.path.lexists(os.path.join(self.root, path)) \
            or (self.lookup is not None and self.lookup.holds(doc_id))

    def problems(self, path: str, analysis: Analysis, binding: dict[str, str]) -> list[Issue]:
        """What the repository rules over what `binding` can see report at `path` once the valid
        document `analysis` is added there (as over the whole work tree)."""
        changed = {**graph.in_view(self.analyses, binding), path: analysis}
        named = [(p, a.facts) for p, a in sorted(changed.items()) if a.facts is not None]
        everything = dict(changed)
        for found, facts in looked_up(named, self._context(named, binding), set(self.analyses) | {path}):
            everything.setdefault(found, Analysis(kind_of(found), [], facts))
        return [i for i in graph.repository_rules(everything, added={path}, change={path}) if i.path == path]

    def _context(self, named: list[tuple[str, dict[str, Any]]], binding: dict[str, str]) -> Context:
        lookup = self.lookup
        changed = {p: Analysis(kind_of(p), [], f) for p, f in named}

        def context(asked: Wanted, leave_out: set[str]) -> list[tuple[str, dict[str, Any]]]:
            if lookup is None:
                return []
            reached = lookup.reached(_graph_starts(changed, asked.graph_types)) if asked.graph_types else set()
            found = lookup.matching(asked.ids, asked.hashes, asked.entities, asked.relation_targets, reached, leave_out)
            return [(p, f) for p, f in found if graph.in_sight(f, binding)]

        return context


def _kept_base(git: Git, facts: FactsStore) -> str:
    """The nearest first-parent ancestor of HEAD (HEAD itself first) whose lookup store is kept,
    else HEAD (its store is built)."""
    lines = git.run("log", "--first-parent", f"-n{ANCESTORS}", "--format=%H %T", "HEAD").decode().split()
    commits = list(zip(lines[0::2], lines[1::2]))
    for sha, tree in commits:
        if BaseLookup.kept_tree(tree, facts):
            return sha
    return commits[0][0]


__all__ = ["WorkTree"]
