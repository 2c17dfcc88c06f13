"""Immutability, commit by commit: what a change may do to the files already there. An
observation is never deleted, renamed, modified, retyped or turned into a link; an edited
comprehension raises `version` and keeps every citation; a `.gitattributes` may not convert
documents. `check --base` applies it to every commit of a range and the work tree, the
review's change check to one proposed change (see docs/design.md, the check pipeline)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Set as AbstractSet
from dataclasses import replace

from .. import errors
from ..format.analyze import analyze
from ..format.report import Issue
from ..format.rules import Analysis, kind_of
from ..gitstore import NULL_SHA, Change, Entry, Git
from .attributes import ATTRIBUTES, attribute_issues, index_reader
from .cache import AnalysisCache
from .sources import DOCUMENT_ROOTS, REGULAR_MODES, Listed, Source, not_a_file

ATTRIBUTE_FILES = (".gitattributes", ":(glob)**/.gitattributes")


def immutability_issues(git: Git, base_sha: str | None, source: Source, analyses: dict[str, Analysis],
                        cache: AnalysisCache, before: AbstractSet[str] | None = None,
                        near: AbstractSet[str] | None = None,
                        indexed: list[Change] | None = None) -> tuple[list[Issue], set[str]]:
    """Issues of the change, and the documents it adds (preferred as the duplicate to report).

    With a base: every commit of base..HEAD against its parents (git objects, as stored), then
    the work tree against HEAD. Staged: git's index against HEAD. And the git attributes of
    every commit of the range that touched a .gitattributes. `before`: the base's document
    paths, when the caller listed them already. `near`: the source's paths whose blob git did
    not vouch for (`Source.hashed`); given, the work tree is compared with HEAD only where git's
    own diff or `near` says it may differ, instead of listing HEAD's whole tree (`indexed`: git's
    index against HEAD, when the caller compared them already)."""
    judge = Judge()
    attribute_commits: list[str] = []
    head = "HEAD" if git.has_head() else None
    if base_sha is not None:
        commits = git.commits_between(base_sha) if head else []
        pairs = [(sha, p) for sha, parents in commits for p in (parents or (None,))]
        blocks = iter(git.diff_trees(pairs, *DOCUMENT_ROOTS, *ATTRIBUTE_FILES))
        for sha, parents in commits:
            per_parent = [next(blocks) for _ in (parents or (None,))]
            judge.commit(sha, per_parent)
            if any(is_attributes(c.path) for block in per_parent for c in block):
                attribute_commits.append(sha)
    ref = head or base_sha
    listed = source.listed
    if near is not None and head is not None and base_sha is not None:
        reference, listed = _near_head(git, near, source, indexed)
    else:
        reference = git.ls_tree(ref, *DOCUMENT_ROOTS) if ref else []
    if base_sha is None:
        before = {e.path for e in reference}
    elif before is None:
        before = {e.path for e in git.ls_tree(base_sha, *DOCUMENT_ROOTS)}
    judge.changes(listing_changes(reference, listed), "")
    issues = judge.issues + comprehension_edits(git, judge.edits, analyses, cache)

    for sha in attribute_commits:
        issues.extend(attributes_at(git, sha))
    return issues, {item.path for item in source.listed} - before


def _near_head(git: Git, near: AbstractSet[str], source: Source,
               indexed: list[Change] | None) -> tuple[list[Entry], list[Listed]]:
    """HEAD's entries and the source's documents at the paths where they may differ: where git's
    index differs from HEAD (trees compared, no file read), and `near`, where the work tree may
    differ from the index; everywhere else the work tree is HEAD."""
    moved = git.diff("--cached", "HEAD", "--", *DOCUMENT_ROOTS) if indexed is None else indexed  # the work tree's: `near`
    reference = [Entry(c.old_mode, c.old_sha, c.path) for c in moved if c.status != "A"]
    paths = set(near) | {c.path for c in moved}
    reference += git.ls_tree_at("HEAD", set(near) - {c.path for c in moved})  # HEAD's entry of a path git did not name
    return reference, [item for item in source.listed if item.path in paths]


def attributes_at(git: Git, sha: str) -> list[Issue]:
    """The git-attributes rule on the tree of commit `sha` (read into a temporary index)."""
    with tempfile.TemporaryDirectory(prefix="obsrepo-") as tmp:
        at = git.with_index(os.path.join(tmp, "index"))
        at.run("read-tree", sha)
        documents = [e.path for e in at.ls_files(*DOCUMENT_ROOTS) if e.mode in REGULAR_MODES]
        found = at.check_attr(documents, ATTRIBUTES, cached=True)
        return attribute_issues(at, found, index_reader(at), commit=sha)


def is_attributes(path: str) -> bool:
    return path == ".gitattributes" or path.endswith("/.gitattributes")


def first_of_each(issues: list[Issue]) -> list[Issue]:
    """One issue per problem: the first commit that made it (commits come parents first, the
    work tree last)."""
    seen: set[tuple] = set()
    kept = []
    for issue in issues:
        key = (issue.path, issue.rule, issue.line, issue.col)
        if key not in seen:
            seen.add(key)
            kept.append(issue)
    return kept


def listing_changes(reference: list[Entry], listed: list[Listed]) -> list[Change]:
    """What changed from `reference` (a tree) to `listed` (the work tree or index), compared by
    blob id and mode; work-tree files are hashed from their raw bytes, never through filters."""
    old = {e.path: e for e in reference if not e.path.endswith("/.gitkeep")}
    new = {item.path: item for item in listed}
    changes = []
    for path in sorted(old.keys() | new.keys()):
        o, n = old.get(path), new.get(path)
        if n is None:
            assert o is not None
            changes.append(Change("D", o.mode, "000000", o.sha, NULL_SHA, path))
        elif o is None:
            changes.append(Change("A", "000000", n.mode, NULL_SHA, n.sha, path))
        elif o.mode[:2] != n.mode[:2]:  # file, symlink, gitlink
            changes.append(Change("T", o.mode, n.mode, o.sha, n.sha, path))
        elif o.mode != n.mode or o.sha != n.sha:
            changes.append(Change("M", o.mode, n.mode, o.sha, n.sha, path))
    return changes


class Judge:
    """Applies the immutability rules to changes; comprehension edits are collected to be
    compared once every blob they need is read."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []
        self.edits: list[tuple[Change, str]] = []

    def commit(self, sha: str, per_parent: list[list[Change]]) -> None:
        """A commit against its first parent; a merge also against its other parents, for what
        the merge itself changed (differs from every parent): an observation the other side
        brought, modified while resolving the merge, is still modified."""
        self.changes(per_parent[0], sha)
        if len(per_parent) < 2:
            return
        everywhere = set.intersection(*({c.path for c in block} for block in per_parent))
        first = {c.path: c.status for c in per_parent[0]}
        for block in per_parent[1:]:
            self.changes([c for c in block if c.path in everywhere and c.status != "A"
                          and (kind_of(c.path) != "comprehension" or first.get(c.path) == "A")], sha)

    def changes(self, changes: list[Change], sha: str) -> None:
        for change in changes:
            self._one(change, sha)

    def _issue(self, path: str, rule: str, message: str, sha: str) -> None:
        if sha:
            message = f"commit {sha[:12]}: {message}"
        self.issues.append(Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, rule, message, commit=sha))

    def _one(self, change: Change, sha: str) -> None:
        path = change.path
        if path.endswith("/.gitkeep"):
            return
        if kind_of(path) == "comprehension":
            if change.status == "M" and change.old_mode in REGULAR_MODES and change.new_mode in REGULAR_MODES:
                self.edits.append((change, sha))  # whatever the mode change: the edit rules still apply
            return
        if kind_of(path) != "observation" and path != "observations":
            return
        if change.new_mode in ("120000", "160000") and change.status in ("A", "T", "M"):
            issue = not_a_file(path, change.new_mode)
            self._issue(path, issue.rule, issue.message, sha)
        elif change.status == "D":
            self._issue(path, "deleted", "an observation was deleted or renamed; observations are immutable "
                                         "(withdraw one with a new observation that `retracts` it)", sha)
        elif change.status == "T":
            self._issue(path, "type-changed", "an observation was turned into another kind of file", sha)
        elif change.status == "M":
            if change.old_mode != change.new_mode:
                self._issue(path, "mode-changed", f"file mode changed {change.old_mode} → {change.new_mode}; "
                                                  "observations are immutable", sha)
            if change.old_sha != change.new_sha:
                self._issue(path, "modified", "an existing observation was modified; observations are immutable "
                                              "(add a new observation that `corrects` it)", sha)


def comprehension_edits(git: Git, edits: list[tuple[Change, str]], analyses: dict[str, Analysis],
                        cache: AnalysisCache) -> list[Issue]:
    """Each edit against the version it replaced; blobs not in the analysis cache are read in one go."""
    known: dict[tuple[str, str], Analysis | None] = {}
    missing: dict[str, list[str]] = {}
    for change, sha in edits:
        sides = [change.old_sha] + ([change.new_sha] if sha else [])
        for blob in sides:
            hit = cache.get(change.path, blob)
            if hit is None:
                missing.setdefault(blob, []).append(change.path)
            known[(change.path, blob)] = hit
    for blob, data in git.read_blobs(missing):
        for path in missing[blob]:
            analysis = analyze(path, data)
            cache.put(path, blob, analysis)
            known[(path, blob)] = analysis
    issues = []
    for change, sha in edits:
        before = known[(change.path, change.old_sha)]
        after = known[(change.path, change.new_sha)] if sha else analyses.get(change.path)
        if before is None or after is None or before.facts is None or after.facts is None:
            continue
        for issue in comprehension_edit(change.path, before.facts, after.facts):
            if sha:
                issue = replace(issue, message=f"commit {sha[:12]}: {issue.message}", commit=sha)
            issues.append(issue)
    return issues


def comprehension_edit(path: str, before: dict, after: dict) -> list[Issue]:
    """What `check --base` holds an edited comprehension to: `version` raised, no citation
    dropped (the write path's belief updates are held to the same)."""
    issues = []
    line, col = after["loc"].get("version", (1, 1))
    if after["version"] <= before["version"]:
        issues.append(Issue(path, line, col, errors.VALIDATION_ERROR, "comprehension-edit",
                            f"an edited comprehension must raise `version` (was {before['version']}, now {after['version']})"))
    dropped = [o for o in before["observations"] if o not in after["observations"]]
    if dropped:
        line, col = after["loc"].get("observations", (1, 1))
        issues.append(Issue(path, line, col, errors.VALIDATION_ERROR, "comprehension-edit",
                            f"an edit may not drop cited observations: {', '.join(dropped)}"))
    return issues
