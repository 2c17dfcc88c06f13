"""`check --base B`, the check of a pull request: it costs what the change costs.

Only the documents the change touches (those of the work tree whose blob differs from the
merge base's, and any PATHS asked for) are read and judged one by one; the repository rules
hold them against the rest of the tree through the compact facts of its blobs (`facts.py`),
never read again once known. Immutability is still checked commit by commit over `B..HEAD`
and the work tree (docs/design.md §2.6, §8). Problems of documents the change does not touch
are not reported again: the base was checked when it was merged (as `obsrepo diff` judges a
change, `change.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..format.rules import Analysis, kind_of
from ..gitstore import Git
from .analysis import Judged, analyze_source
from .cache import AnalysisCache
from .change import Wanted, rules_of_change
from .facts import FactsStore, blob_key
from .immutability import immutability_issues
from .lookup import BaseLookup
from .sources import DOCUMENT_ROOTS, REGULAR_MODES, Listed, Source


def judge_change(git: Git, base_sha: str, source: Source, facts: FactsStore, wanted: frozenset[str] | None,
                 progress: Callable[[int, int], None] | None = None) -> Judged:
    moved = _touched(git, base_sha, source) | (wanted or set())
    touched: list[Listed] = []
    elsewhere: set[str] = set()  # not a document here any more: a symlink, a submodule where the base had one
    for item in source.listed:
        if item.mode not in REGULAR_MODES:
            elsewhere.add(item.path)
        elif item.path in moved:
            touched.append(item)
    off = AnalysisCache(None, {}, "")  # the changed documents are new to every cache: read them
    analyses = analyze_source(source.only(touched), off, progress)
    # what the change adds is `touched` (the rules of the change prefer the rest's documents)
    changed, _added = immutability_issues(git, base_sha, source, analyses, off, before=frozenset(), near=source.hashed)
    lookup = BaseLookup.open(git, base_sha, facts, moved | elsewhere, progress)  # the rest: the base's tree but `moved`
    if facts.loaded:  # once merged, they are the rest of the next pull request (never loaded for them alone)
        for item in touched:
            facts.learn(blob_key(kind_of(item.path), item.sha), analyses[item.path].facts)

    def context(asked: Wanted, leave_out: set[str]) -> list[tuple[str, dict[str, Any]]]:
        # of each relation graph the change adds to, what its new edges reach, not the whole graph
        reached = lookup.reached(_graph_starts(analyses, asked.graph_types)) if asked.graph_types else set()
        return lookup.matching(asked.ids, asked.hashes, asked.entities, asked.relation_targets, reached, leave_out)

    return Judged(analyses, changed, rules_of_change(analyses, context), off.missed + lookup.read)


def _graph_starts(analyses: dict[str, Analysis], types: set[str]) -> dict[str, set[str]]:
    """For each relation type, the entities the change's new edges of that type leave and reach."""
    starts: dict[str, set[str]] = {kind: set() for kind in types}
    for analysis in analyses.values():
        facts = analysis.facts
        if facts is not None and facts["kind"] == "observation":
            for kind, target in facts["relations"]:
                if kind in starts:
                    starts[kind].update((facts["entity"], target))
    return starts


def _touched(git: Git, base_sha: str, source: Source) -> set[str]:
    """The paths whose blob may differ from the merge base's: those git's index holds with
    another blob than the base (a comparison of trees, no file read) and those whose blob the
    index does not vouch for (`Source.hashed`: changed, untracked, converted by attributes)."""
    if source.hashed is None:  # blobs not vouched for by git's index: compare every one
        before = {e.path: e.sha for e in git.ls_tree(base_sha, *DOCUMENT_ROOTS)}
        return {item.path for item in source.listed if before.get(item.path) != item.sha}
    return {c.path for c in git.diff("--cached", base_sha, "--", *DOCUMENT_ROOTS)} | source.hashed


__all__ = ["judge_change"]
