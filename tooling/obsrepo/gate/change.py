"""The check of a change between two commits, on git objects only (for `obsrepo diff`).

`check --base BASE` on HEAD checks the whole tree of HEAD; a review wants the same verdict on
any pair of commits (a pull request's head need not be checked out) and in well under a
second on a large repository. So this checks what the change brings (docs/design.md §12):

- every commit of BASE..HEAD against its parents, as `check --base` does (immutability,
  symlinks and submodules, comprehension edits, the git-attributes rule);
- every document added or modified between BASE and HEAD: the per-document rules;
- the repository rules for those documents against the rest of HEAD's tree. The rest is not
  read from git: the caller hands in its facts (`Context`), looked up in the index by what the
  changed documents name (ids, content hashes, relation targets), plus every document that
  retracts, and every document carrying a PART_OF, DEPENDS_ON or DUPLICATE_OF relation when
  the change adds one of that type (the graph rules need the whole graph of that type), and,
  when the change merges or declares entities distinct, the merges and declarations of every
  entity merged with theirs.

Problems of documents the change does not touch are not reported again: BASE was checked
when it was merged. No work tree, no analysis cache file, nothing written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..format.analyze import analyze
from ..format.report import Issue, Report
from ..format.rules import Analysis, kind_of, place
from ..gitstore import Git
from . import graph
from .cache import AnalysisCache
from .graph import GRAPH_TYPES
from .identity import identity_ends, merges_touching
from .immutability import ATTRIBUTE_FILES, Judge, attributes_at, comprehension_edits, first_of_each, is_attributes
from .sources import DOCUMENT_ROOTS, REGULAR_MODES

# rules that read another document by name: on a document of the context (whose names were not
# all looked up) they would be artefacts of the lookup, not problems
_LOOKUP_RULES = frozenset({"corrects-target", "retracts-target", "relation-target", "citation"})


@dataclass
class Wanted:
    """What the changed documents name: the context must hold every document of HEAD (other
    than the changed ones) that has one of these ids, content hashes or entities."""

    ids: set[str] = field(default_factory=set)
    hashes: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)
    # graph relation types the changed documents add: only a new edge can close a cycle or
    # merge an entity twice, so the context holds every edge of these types and no other
    graph_types: set[str] = field(default_factory=set)
    relation_targets: set[str] = field(default_factory=set)  # documents with a relation to one of these


# (wanted, paths to leave out) → [(path, facts)] of HEAD's other documents, as `analyze` gives them
Context = Callable[[Wanted, set[str]], list[tuple[str, dict[str, Any]]]]


def check_change(git: Git, base: str, head: str, context: Context) -> Report:
    """The problems `check --base BASE` would report on HEAD that the change BASE..HEAD makes."""
    report = Report()
    judge = Judge()
    commits = git.commits_between(base, head)
    pairs = [(sha, p) for sha, parents in commits for p in (parents or (None,))]
    blocks = iter(git.diff_trees(pairs, *DOCUMENT_ROOTS, *ATTRIBUTE_FILES))
    attribute_commits = []
    for sha, parents in commits:
        per_parent = [next(blocks) for _ in (parents or (None,))]
        judge.commit(sha, per_parent)
        if any(is_attributes(c.path) for block in per_parent for c in block):
            attribute_commits.append(sha)

    changes = git.diff(base, head, "--", *DOCUMENT_ROOTS, "schemas/entities")
    documents = sorted((c.path, c.new_sha) for c in changes
                       if c.status in ("A", "M", "T") and c.new_mode in REGULAR_MODES and kind_of(c.path) != "other")
    analyses: dict[str, Analysis] = {}
    contents = dict(git.read_blobs(sorted({sha for _, sha in documents})))
    for path, sha in documents:
        analyses[path] = analyze(path, contents[sha])
    cache = AnalysisCache(None, {}, "")
    for path, sha in documents:
        cache.put(path, sha, analyses[path])
    issues = judge.issues + comprehension_edits(git, judge.edits, analyses, cache)
    for sha in attribute_commits:
        issues.extend(attributes_at(git, sha))

    for path, analysis in analyses.items():
        report.issues.extend(analysis.issues)
        report.issues.extend(place(path, analysis))
    report.issues.extend(rules_of_change(analyses, context))
    report.issues.extend(_entity_schemas(git, changes))
    report.issues.extend(first_of_each(issues))
    report.checked = len(analyses)
    return report


def rules_of_change(analyses: dict[str, Analysis], context: Context) -> list[Issue]:
    """The repository rules for the changed documents `analyses`, against the rest of the tree as
    `context` gives it; problems of documents the change did not touch are not reported again."""
    changed = set(analyses)
    everything = dict(analyses)
    named = [(path, a.facts) for path, a in sorted(analyses.items()) if a.facts is not None]
    for path, facts in looked_up(named, context, changed):
        everything.setdefault(path, Analysis(kind_of(path), [], facts))
    found = graph.repository_rules(everything, changed, change=changed)
    return [i for i in found if i.path in changed or i.rule not in _LOOKUP_RULES]


def looked_up(documents: list[tuple[str, dict[str, Any]]], context: Context, leave_out: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The documents of the state (`context`, all but `leave_out`) the repository rules read to
    judge `documents` added to it: what they name, the graph of each relation type they add,
    and, when they retract, the observations of the entities withdrawn and those relating to them."""
    wanted = Wanted()
    for _path, facts in documents:
        wanted.ids.add(facts["id"])
        if facts["kind"] == "comprehension":
            wanted.ids.update(facts["observations"])
            continue
        wanted.hashes.add(facts["hash"])
        wanted.ids.update(facts["corrects"] + facts["retracts"])
        wanted.ids.update(([facts["feedback"]] if facts.get("feedback") else []) + list(facts.get("reclassify") or ()))
        wanted.entities.update(target for _kind, target in facts["relations"])
        wanted.graph_types.update(kind for kind, _target in facts["relations"] if kind in GRAPH_TYPES)
    found = dict(context(wanted, leave_out))
    # a retraction can leave a relation of another document without its target
    withdrawn = {t for _, f in documents if f["kind"] == "observation" for t in f["retracts"]}
    orphaned = {f["entity"] for f in [*found.values(), *(f for _, f in documents)]
                if f["kind"] == "observation" and f["id"] in withdrawn and f["entity"]}
    if orphaned:
        for path, facts in context(Wanted(entities=orphaned, relation_targets=orphaned), leave_out):
            found.setdefault(path, facts)
    # a merge or a declaration of distinctness is judged on every entity merged with its ends
    # (both ways: A → B and C → B make A and C one) and what they are declared distinct from
    ends: set[str] = set().union(*(identity_ends(f) for _, f in documents)) if documents else set()
    walked: set[str] = set()
    while ends - walked:
        frontier = ends - walked
        walked |= frontier
        for path, facts in context(Wanted(entities=frontier, relation_targets=frontier), leave_out):
            found.setdefault(path, facts)
            ends |= merges_touching(facts, walked)
        for _path, facts in documents:
            ends |= merges_touching(facts, walked)
    return sorted(found.items())


def _entity_schemas(git: Git, changes: list) -> list[Issue]:
    from ..format.entity_schema import read_entity_schema

    schemas = [(c.path, c.new_sha) for c in changes if c.path.startswith("schemas/entities/")
               and c.path.endswith((".yaml", ".yml")) and c.status in ("A", "M", "T")]
    issues: list[Issue] = []
    for (path, _sha), (_, data) in zip(schemas, git.read_blobs([sha for _, sha in schemas])):
        issues.extend(read_entity_schema(path, data)[1])
    return issues


__all__ = ["GRAPH_TYPES", "Context", "Wanted", "check_change", "looked_up", "rules_of_change"]
