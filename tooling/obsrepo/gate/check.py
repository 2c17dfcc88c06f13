"""`obsrepo check`: per-document rules, repository rules and immutability, as one report."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import errors
from ..errors import UsageError
from ..format.analyze import analyze
from ..format.report import Issue, Report
from ..format.rules import place
from ..format.vocabulary import ENTITY_SCHEMAS_DIR
from ..gitstore import Git
from . import attributes, graph
from .analysis import Judged, analyze_source
from .attributes import ATTRIBUTES, attribute_issues, autocrlf, index_reader, worktree_reader
from .cache import AnalysisCache, paused_gc
from .facts import FactsStore
from .immutability import first_of_each, immutability_issues
from .sources import REGULAR_MODES, Source, commit, not_a_file, staged, worktree_in_git

if TYPE_CHECKING:
    from .pull import Near


@dataclass
class CheckRequest:
    cwd: str
    paths: tuple[str, ...] = ()
    base: str | None = None
    staged: bool = False
    progress: Callable[[int, int], None] | None = None  # (documents analysed, documents to analyse)


@dataclass(frozen=True)
class CheckPlan:
    """What a check will look at, decided before any document is read."""

    root: str
    staged: bool  # git's index against HEAD; otherwise the work tree
    base_sha: str | None  # immutability commit by commit over base..HEAD (the merge base of --base)
    wanted: frozenset[str] | None  # the paths asked for, relative to the root (None: every document)

    @property
    def immutability(self) -> bool:
        return self.base_sha is not None or self.staged


def plan_check(git: Git, request: CheckRequest) -> CheckPlan:
    """Resolve the request: revisions become full shas, paths become repository paths."""
    if request.staged and request.base is not None:
        raise UsageError("staged and base cannot be combined", parameter="staged")
    base_sha = None
    if request.base is not None:
        base_sha = git.merge_base(git.resolve(request.base, "base"), git.resolve("HEAD", "base")) \
            if git.has_head() else git.resolve(request.base, "base")
    wanted = _wanted_paths(git.root, request.cwd, request.paths)
    return CheckPlan(git.root, request.staged, base_sha, frozenset(wanted) if wanted is not None else None)


def run_check(request: CheckRequest) -> Report:
    git = Git.discover(request.cwd)
    if git is None:
        raise errors.GitError(f"{os.path.abspath(request.cwd)} is not inside a git repository; `obsrepo check` "
                              "checks a git repository (run it from inside one)", cwd=os.path.abspath(request.cwd))
    return apply_check(git, plan_check(git, request), request.progress)


def apply_check(git: Git, plan: CheckPlan, progress: Callable[[int, int], None] | None = None) -> Report:
    """Read the documents the plan names (through the cache) and run every rule family:
    per document, placement, repository rules, entity schemas, immutability and attributes."""
    with paused_gc():
        return _apply_check(git, plan, progress)


def _apply_check(git: Git, plan: CheckPlan, progress: Callable[[int, int], None] | None) -> Report:
    facts = FactsStore.open(git)
    if plan.base_sha is not None:
        from .pull import Near, judge_change  # a pull request: what B..HEAD touches, the rest from `facts`

        near = Near.open(git, plan.base_sha, facts, plan.wanted)  # listed near the base when its store is kept
        source, converted = plan_source(git, plan, near)
        judged = judge_change(git, plan.base_sha, source, facts, plan.wanted, progress, near, converted)
    else:
        source, converted = plan_source(git, plan)
        judged = _judge_all(git, plan, source, facts, progress)
    facts.save()
    return _report(git, plan, source, converted, judged)


def _judge_all(git: Git, plan: CheckPlan, source: Source, facts: FactsStore,
               progress: Callable[[int, int], None] | None) -> Judged:
    """Every document of the source, one by one and under the repository rules, streamed
    (`whole.py`): what a document leaves in memory is its compact facts."""
    from .whole import stream_tree

    cache = AnalysisCache.open(git)
    streamed = stream_tree(source, cache, facts, progress)
    changed: list[Issue] = []
    added = None
    if plan.immutability:  # --staged (a base is `pull.py`'s)
        changed, added = immutability_issues(git, plan.base_sha, source, streamed.kept, cache)
    cache.save()
    judged = streamed.judged(source, added)
    judged.changed, judged.read = changed, cache.missed  # with the versions an edit replaced
    return judged


def _report(git: Git, plan: CheckPlan, source: Source, converted: list[tuple[str, str, str]], judged: Judged) -> Report:
    analyses = judged.analyses
    report = Report(read=judged.read)
    judged_paths: set[str] = set()  # asked for by name (pre-commit): which were judged as documents
    if plan.wanted is not None:
        judged_paths = set(analyses) if judged.own is None else set(_documents(source))
    _check_outside(plan, judged_paths, report)
    # the attributes git applies to the documents: when it commits the index (--staged), or
    # when it reads and writes the work tree (.gitattributes at any depth, info/attributes)
    reader = index_reader(git) if plan.staged else worktree_reader(git)
    changed = first_of_each(judged.changed + attribute_issues(git, converted, reader))
    reported = {(i.path, i.rule) for i in changed}
    for item in source.not_files():
        if (item.path, not_a_file(item.path, item.mode).rule) not in reported:
            report.issues.append(not_a_file(item.path, item.mode))
    if judged.own is None:
        for path, analysis in analyses.items():
            report.issues.extend(analysis.issues)
            report.issues.extend(place(path, analysis))
        report.issues.extend(graph.classification_warnings(analyses))
    else:
        report.issues.extend(judged.own)
    report.issues.extend(judged.rules)
    report.issues.extend(_entity_schemas(plan.root))
    report.issues.extend(_retention(plan.root))
    report.issues.extend(changed)

    if plan.wanted is None:  # with a base, the untouched documents too: the rules judged them by their facts
        report.checked += source.documents()
    else:
        # immutability and attributes concern the change as a whole: a deleted or renamed-away
        # path, or a .gitattributes, is never among the names pre-commit passes for documents
        report.checked += len(plan.wanted & judged_paths)
        gone = {i.path for i in changed if i.code == errors.IMMUTABLE_VIOLATION}  # said once: deleted, not missing
        report.issues = [i for i in report.issues
                         if (i.path in plan.wanted and not (i.rule == "file-missing" and i.path in gone))
                         or i.code == errors.IMMUTABLE_VIOLATION or i.rule == attributes.RULE]
    return report


def plan_source(git: Git, plan: CheckPlan, near: Near | None = None) -> tuple[Source, list[tuple[str, str, str]]]:
    """Where the documents come from, and the documents git would convert: those are hashed
    from their raw bytes rather than trusted from git's stat data (git compares through filters).
    `near`: the work tree is listed near a base tree where it can (`pull.Near`)."""
    converted: list[tuple[str, str, str]] = []
    if plan.staged:
        source = staged(git)
        converted = git.check_attr(_documents(source), ATTRIBUTES, cached=True)
        return source, converted

    def rehash(paths: list[str]) -> Iterable[str]:
        converted.extend(git.check_attr(paths, ATTRIBUTES))
        return paths if autocrlf(git) else {path for path, _, _ in converted}

    return worktree_in_git(git, rehash, near), converted


def _check_outside(plan: CheckPlan, judged: set[str], report: Report) -> None:
    """Paths asked for that the source does not list (outside the document folders, missing)."""
    for path in sorted(plan.wanted - judged) if plan.wanted is not None else ():
        data = _read_outside(plan.root, path)
        if data is None:
            report.issues.append(Issue(path, 1, 1, errors.VALIDATION_ERROR, "file-missing", "no such document"))
            continue
        if path.startswith(ENTITY_SCHEMAS) or path == "schemas/retention.yaml":  # not a document: reported below
            report.checked += 1
            continue
        analysis = analyze(path, data)
        report.issues.extend(analysis.issues)
        report.checked += 1


ENTITY_SCHEMAS = ENTITY_SCHEMAS_DIR


def _entity_schemas(root: str) -> list[Issue]:
    """`schemas/entities/<type>.yaml` files must be valid entity-schema/v1 (docs/design.md §4)."""
    folder = os.path.join(root, "schemas", "entities")
    if not os.path.isdir(folder):
        return []
    from ..format.entity_schema import read_entity_schema

    issues: list[Issue] = []
    for name in sorted(os.listdir(folder)):
        path = f"schemas/entities/{name}"
        if not name.endswith((".yaml", ".yml")):
            continue
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                data = handle.read()
        except OSError as exc:  # a folder named like a schema, a file that cannot be read
            issues.append(Issue(path, 1, 1, errors.VALIDATION_ERROR, "entity-schema",
                                f"the entity schema cannot be read as a file ({exc.strerror or exc})"))
            continue
        issues.extend(read_entity_schema(path, data)[1])
    return issues


def _retention(root: str) -> list[Issue]:
    """`schemas/retention.yaml` must be valid retention/v1 (docs/design.md §14)."""
    from ..format.vocabulary import RETENTION_PATH

    full = os.path.join(root, RETENTION_PATH)
    if not os.path.lexists(full):
        return []
    from ..format.retention import RULE, read_retention

    try:
        with open(full, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return [Issue(RETENTION_PATH, 1, 1, errors.VALIDATION_ERROR, RULE,
                      f"the retention file cannot be read as a file ({exc.strerror or exc})")]
    return read_retention(RETENTION_PATH, data)[1]


def _wanted_paths(root: str, cwd: str, paths: tuple[str, ...]) -> set[str] | None:
    if not paths:
        return None
    wanted: set[str] = set()
    for given in paths:
        full = os.path.abspath(os.path.join(cwd, given))
        rel = os.path.relpath(full, root).replace(os.sep, "/")
        if rel.startswith("../"):
            raise UsageError(f"{given} is outside the repository", parameter="PATHS")
        if os.path.isdir(full) and not os.path.islink(full):
            for dirpath, _dirs, files in os.walk(full):
                for name in files:
                    wanted.add(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
        else:
            wanted.add(rel)
    return wanted


def _read_outside(root: str, path: str) -> bytes | None:
    full = os.path.join(root, path)
    if not os.path.isfile(full) or os.path.islink(full):
        return None
    with open(full, "rb") as handle:
        return handle.read()


def _documents(source: Source) -> list[str]:
    return [item.path for item in source.listed if item.mode in REGULAR_MODES]


__all__ = ["CheckRequest", "run_check", "analyze_source", "commit"]
