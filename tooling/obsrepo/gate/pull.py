"""`check --base B`, the check of a pull request: it costs what the change costs.

Only the documents the change touches (those of the work tree whose blob differs from the
merge base's, and any PATHS asked for) are read and judged one by one; the repository rules
hold them against the rest of the tree through the compact facts of its blobs (`facts.py`),
never read again once known. Immutability is still checked commit by commit over `B..HEAD`
and the work tree (docs/design.md §2.6, §8). Problems of documents the change does not touch
are not reported again: the base was checked when it was merged (as `obsrepo diff` judges a
change, `change.py`).

Once the base tree's lookup store is kept, the work tree is not listed whole either (`Near`):
only the paths where git's index or the work tree differ from the base, or from HEAD, are
listed; the rest is the base's, counted from the store. git is asked the attributes of those
paths only, when the store says git converts none of the base's documents (under the attribute
files outside the tree as they are now) and the work tree has the base's `.gitattributes` in
every folder that holds a document; any other case lists everything and asks git about it all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..format.rules import Analysis, kind_of
from ..gitstore import Change, Entry, Git
from .analysis import Judged, analyze_source
from .attributes import ATTRIBUTES, attribute_files_unchanged, autocrlf, outside_digest
from .cache import AnalysisCache
from .change import Wanted, rules_of_change
from .facts import FactsStore, blob_key
from .immutability import immutability_issues, is_attributes
from .lookup import BaseLookup
from .sources import DOCUMENT_ROOTS, REGULAR_MODES, Listed, Rest, Source

_UNDER_ROOTS = tuple(f"{root}/" for root in DOCUMENT_ROOTS)


class Near:
    """The listing of a work tree near a base tree whose lookup store is kept (see the module's
    docstring); called by `worktree_in_git` with the paths where the work tree differs from git's
    index, it gives git's index entries to list and the base's rest, or None: list everything."""

    def __init__(self, git: Git, base_sha: str, lookup: BaseLookup | None, wanted: frozenset[str] | None) -> None:
        self.git, self.base_sha, self.lookup, self.wanted = git, base_sha, lookup, wanted
        self.changed: set[str] | None = None  # where git's index differs from the base, when listed near it
        self.indexed: list[Change] | None = None  # git's index against HEAD

    @classmethod
    def open(cls, git: Git, base_sha: str, facts: FactsStore, wanted: frozenset[str] | None) -> Near:
        return cls(git, base_sha, BaseLookup.kept(git, base_sha, facts), wanted)

    def __call__(self, named: list[str]) -> tuple[list[Entry], Rest] | None:
        git, lookup = self.git, self.lookup
        if lookup is None or not git.has_head():
            return None
        if lookup.meta("attributes") != outside_digest(git) or autocrlf(git):
            return None  # git may convert a document of the rest: every path is asked and hashed
        if not attribute_files_unchanged(git.root, lookup.folders(), lookup.attribute_files()):
            return None  # the rest's attributes may differ from the base's (those of what is listed are asked)
        # git's index against the base, composed of two comparisons that cost what differs:
        # the base's tree against HEAD's (trees only) and the index against HEAD (the index)
        spec = (*DOCUMENT_ROOTS, ":(literal).gitattributes")
        committed, indexed = git.diff(self.base_sha, "HEAD", "--", *spec), git.diff("--cached", "HEAD", "--", *spec)
        if any(c.status == "U" for c in indexed) or any(is_attributes(c.path) for c in committed + indexed):
            return None  # unresolved conflicts (the whole listing says so), or attributes git reads from its index
        base = {c.path: Entry(c.old_mode, c.old_sha, c.path) for c in committed if c.status != "A"}
        index = {c.path: Entry(c.new_mode, c.new_sha, c.path) for c in committed if c.status != "D"}
        for c in indexed:  # the base's entry is HEAD's where the commits left the path alone
            if c.path not in base and c.path not in index and c.status != "A":
                base[c.path] = Entry(c.old_mode, c.old_sha, c.path)
            index.pop(c.path, None)
            if c.status != "D":
                index[c.path] = Entry(c.new_mode, c.new_sha, c.path)
        changed = {path for path in base.keys() | index.keys() if base.get(path) != index.get(path)}
        asked = {path for path in self.wanted or () if path.startswith(_UNDER_ROOTS)}
        paths = set(base) | set(index) | set(named) | asked
        for entry in git.ls_tree_at(self.base_sha, paths - base.keys() - index.keys()):  # the index holds the base's
            if entry.path not in base and entry.path not in index:
                index[entry.path] = base[entry.path] = entry
        self.changed, self.indexed = changed, indexed
        documents = int(lookup.meta("documents") or 0) - sum(
            1 for e in base.values() if e.mode in REGULAR_MODES and kind_of(e.path) != "other"
            and not e.path.endswith("/.gitkeep"))
        not_files = [Listed(path, sha, mode) for path, mode, sha in lookup.not_files() if path not in base]
        return list(index.values()), Rest(not_files, documents)


def judge_change(git: Git, base_sha: str, source: Source, facts: FactsStore, wanted: frozenset[str] | None,
                 progress: Callable[[int, int], None] | None = None, near: Near | None = None,
                 converted: list[tuple[str, str, str]] | None = None) -> Judged:
    read = read_change(git, base_sha, source, facts, wanted, progress, near, converted)
    analyses, lookup = read.analyses, read.lookup
    # what the change adds is `touched` (the rules of the change prefer the rest's documents)
    indexed = None if near is None or near.indexed is None else [c for c in near.indexed if c.path != ".gitattributes"]
    off = read.cache
    changed, _added = immutability_issues(git, base_sha, source, analyses, off, before=frozenset(), near=source.hashed,
                                          indexed=indexed)

    def context(asked: Wanted, leave_out: set[str]) -> list[tuple[str, dict[str, Any]]]:
        # of each relation graph the change adds to, what its new edges reach, not the whole graph
        reached = lookup.reached(graph_starts(analyses, asked.graph_types)) if asked.graph_types else set()
        return lookup.matching(asked.ids, asked.hashes, asked.entities, asked.relation_targets, reached, leave_out)

    return Judged(analyses, changed, rules_of_change(analyses, context), off.missed + lookup.read)


@dataclass
class ChangeRead:
    """What `read_change` read of a change, and the lookup store of the rest."""

    analyses: dict[str, Analysis]  # the documents the change touches, read and analysed
    lookup: BaseLookup  # the base tree's, minus the paths the change touches
    cache: AnalysisCache  # the cache the documents were read around (counts what was read)


def read_change(git: Git, base_sha: str, source: Source, facts: FactsStore, wanted: frozenset[str] | None,
                 progress: Callable[[int, int], None] | None, near: Near | None,
                 converted: list[tuple[str, str, str]] | None) -> ChangeRead:
    """Read the documents of `source` whose blob may differ from the base's (and those `wanted`),
    and open the base's lookup store for the rest (built when it is not kept, and then marked
    when git converts none of the base's files: `converted` are those it converts here)."""
    moved = _touched(git, base_sha, source, near) | (wanted or set())
    touched: list[Listed] = []
    elsewhere: set[str] = set()  # not a document here any more: a symlink, a submodule where the base had one
    for item in source.listed:
        if item.mode not in REGULAR_MODES:
            elsewhere.add(item.path)
        elif item.path in moved:
            touched.append(item)
    off = AnalysisCache(None, {}, "")  # the changed documents are new to every cache: read them
    analyses = analyze_source(source.only(touched), off, progress)
    if near is not None and near.lookup is not None:
        lookup = near.lookup
        lookup.gone = moved | elsewhere
    else:
        lookup = BaseLookup.open(git, base_sha, facts, moved | elsewhere, progress)  # the rest: the base's tree but `moved`
        if lookup.paths is not None and lookup.file is not None and not converted:
            _remember_attributes(git, lookup, source)
    if facts.loaded:  # once merged, they are the rest of the next pull request (never loaded for them alone)
        for item in touched:
            facts.learn(blob_key(kind_of(item.path), item.sha), analyses[item.path].facts)
    return ChangeRead(analyses, lookup, off)


def graph_starts(analyses: dict[str, Analysis], types: set[str]) -> dict[str, set[str]]:
    """For each relation type, the entities the change's new edges of that type leave and reach."""
    starts: dict[str, set[str]] = {kind: set() for kind in types}
    for analysis in analyses.values():
        facts = analysis.facts
        if facts is not None and facts["kind"] == "observation":
            for kind, target in facts["relations"]:
                if kind in starts:
                    starts[kind].update((facts["entity"], target))
    return starts


def _remember_attributes(git: Git, lookup: BaseLookup, source: Source) -> None:
    """Keep in the store just built that git converts none of the base's files, when this check
    asked git about every one of them (those the work tree lists as files, and the others now)
    with the base's .gitattributes in the work tree and found nothing."""
    asked = {item.path for item in source.listed if item.mode in REGULAR_MODES}
    rest = [path for path in lookup.paths or () if path not in asked]
    if attribute_files_unchanged(git.root, lookup.folders(), lookup.attribute_files()) \
            and not git.check_attr(rest, ATTRIBUTES):
        lookup.remember("attributes", outside_digest(git))


def _touched(git: Git, base_sha: str, source: Source, near: Near | None) -> set[str]:
    """The paths whose blob may differ from the merge base's: those git's index holds with
    another blob than the base (a comparison of trees, no file read) and those whose blob the
    index does not vouch for (`Source.hashed`: changed, untracked, converted by attributes)."""
    if source.hashed is None:  # blobs not vouched for by git's index: compare every one
        before = {e.path: e.sha for e in git.ls_tree(base_sha, *DOCUMENT_ROOTS)}
        return {item.path for item in source.listed if before.get(item.path) != item.sha}
    if near is not None and near.changed is not None:
        return near.changed | source.hashed
    return {c.path for c in git.diff("--cached", base_sha, "--", *DOCUMENT_ROOTS)} | source.hashed


__all__ = ["ChangeRead", "Near", "graph_starts", "judge_change", "read_change"]
