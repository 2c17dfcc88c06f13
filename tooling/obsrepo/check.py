"""`obsrepo check`: per-document rules, repository rules and immutability, as one report."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

from . import errors, graph
from .cache import AnalysisCache
from .errors import UsageError
from .gitstore import EMPTY_TREE, NULL_SHA, Git, blob_sha
from .report import Issue, Report
from .rules import Analysis, analyze, kind_of, place
from .sources import DOCUMENT_ROOTS, REGULAR_MODES, Listed, Source, commit, staged, worktree, worktree_in_git

PARALLEL_THRESHOLD = 2000


@dataclass
class CheckRequest:
    cwd: str
    paths: tuple[str, ...] = ()
    base: str | None = None
    staged: bool = False


def run_check(request: CheckRequest) -> Report:
    git = Git.discover(request.cwd)
    if git is None:
        if request.base or request.staged:
            raise errors.GitError(f"{request.cwd} is not inside a git repository (needed for --base/--staged)")
        root = os.path.abspath(request.cwd)
    else:
        root = git.root
    if request.staged and request.base:
        raise UsageError("--staged and --base cannot be combined", parameter="--staged")

    base_sha = None
    if request.base:
        assert git is not None
        base_sha = git.merge_base(git.resolve(request.base, "--base"), git.resolve("HEAD", "--base")) \
            if git.has_head() else git.resolve(request.base, "--base")

    if request.staged and git:
        source = staged(git)
    else:
        source = worktree_in_git(git) if git is not None else worktree(root)
    cache = AnalysisCache.open(git)
    analyses = analyze_source(source, cache)
    cache.save()

    report = Report()
    wanted = _wanted_paths(root, request.cwd, request.paths)
    for path in sorted(wanted - set(analyses)) if wanted is not None else ():
        data = _read_outside(root, path)
        if data is None:
            report.issues.append(Issue(path, 1, 1, errors.VALIDATION_ERROR, "file-missing", "no such document"))
            continue
        if path.startswith(ENTITY_SCHEMAS):  # not a document: `_entity_schemas` below reports its problems
            report.checked += 1
            continue
        analysis = analyze(path, data)
        report.issues.extend(analysis.issues)
        report.checked += 1

    for item in source.listed:
        if item.mode not in REGULAR_MODES:
            report.issues.append(_not_a_file(item.path, item.mode))
    for path, analysis in analyses.items():
        report.issues.extend(analysis.issues)
        report.issues.extend(place(path, analysis))
    report.issues.extend(graph.repository_rules(analyses, _added_since(git, base_sha, request.staged)))
    report.issues.extend(_entity_schemas(root))
    if git is not None and (base_sha or request.staged):
        report.issues.extend(_immutability(git, base_sha, request.staged, analyses))

    if wanted is None:
        report.checked += sum(1 for p in analyses if kind_of(p) != "other")
    else:
        # immutability concerns the change as a whole: a deleted or renamed-away path is
        # never among the names pre-commit passes, so those issues are never filtered out
        report.checked += len(wanted & set(analyses))
        report.issues = [i for i in report.issues if i.path in wanted or i.code == errors.IMMUTABLE_VIOLATION]
    return report


def _not_a_file(path: str, mode: str) -> Issue:
    if mode == "160000":
        return Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, "submodule",
                     "a submodule under the document folders; documents are regular files")
    return Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, "symlink",
                 "a symlink under the document folders; documents are regular files")


def analyze_source(source: Source, cache: AnalysisCache) -> dict[str, Analysis]:
    """Analyse every regular file of `source`, reusing cached results by blob id."""
    analyses: dict[str, Analysis] = {}
    todo: list[Listed] = []
    for item in source.listed:
        if item.mode not in REGULAR_MODES:
            continue
        hit = cache.get(item.path, item.sha)
        if hit is None:
            todo.append(item)
        else:
            analyses[item.path] = hit
    if len(todo) >= PARALLEL_THRESHOLD and (os.cpu_count() or 1) > 1:
        results = _analyze_parallel(source.read(todo))
    else:
        results = ((item, analyze(item.path, data)) for item, data in source.read(todo))
    for item, analysis in results:
        analyses[item.path] = analysis
        cache.put(item.path, item.sha, analysis)
    return analyses


def _analyze_one(job: tuple[str, bytes]) -> list:
    path, data = job
    return analyze(path, data).to_cache()


def _analyze_parallel(items: Iterable[tuple[Listed, bytes]]) -> Iterable[tuple[Listed, Analysis]]:
    import multiprocessing

    listed = list(items)
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    with context.Pool(min(2, os.cpu_count() or 1)) as pool:
        rows = pool.map(_analyze_one, [(item.path, data) for item, data in listed], chunksize=256)
    return [(item, Analysis.from_cache(item.path, row)) for (item, _), row in zip(listed, rows)]


ENTITY_SCHEMAS = "schemas/entities/"


def _entity_schemas(root: str) -> list[Issue]:
    """`schemas/entities/<type>.yaml` files must be valid entity-schema/v1 (DESIGN §4)."""
    folder = os.path.join(root, "schemas", "entities")
    if not os.path.isdir(folder):
        return []
    from .entity_schema import read_entity_schema

    issues: list[Issue] = []
    for name in sorted(os.listdir(folder)):
        path = f"schemas/entities/{name}"
        if not name.endswith((".yaml", ".yml")):
            continue
        with open(os.path.join(folder, name), "rb") as handle:
            issues.extend(read_entity_schema(path, handle.read())[1])
    return issues


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


def _added_since(git: Git | None, base_sha: str | None, is_staged: bool) -> set[str] | None:
    """Paths that are new in this change (preferred as the duplicate to report)."""
    if git is None or not (base_sha or is_staged):
        return None
    return {c.path for c in _changes(git, base_sha, is_staged) if c.status == "A"}


def _changes(git: Git, base_sha: str | None, is_staged: bool) -> list:
    if is_staged:
        head = "HEAD" if git.has_head() else EMPTY_TREE
        return git.diff("--cached", head, "--", *DOCUMENT_ROOTS)
    return git.diff(base_sha, "--", *DOCUMENT_ROOTS)  # type: ignore[arg-type]


def _immutability(git: Git, base_sha: str | None, is_staged: bool, analyses: dict[str, Analysis]) -> list[Issue]:
    issues: list[Issue] = []
    edited: list = []
    for change in _changes(git, base_sha, is_staged):
        path = change.path
        if kind_of(path) == "comprehension":
            if change.status == "M" and change.old_mode == change.new_mode:
                edited.append(change)
            continue
        if kind_of(path) != "observation" and path != "observations":
            continue
        if change.new_mode in ("120000", "160000") and change.status in ("A", "T", "M"):
            issues.append(_not_a_file(path, change.new_mode))
            continue
        if change.status == "D":
            issues.append(Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, "deleted",
                                "an observation was deleted or renamed; observations are immutable "
                                "(withdraw one with a new observation that `retracts` it)"))
        elif change.status == "T":
            issues.append(Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, "type-changed",
                                "an observation was turned into another kind of file"))
        elif change.status == "M":
            new_sha = change.new_sha
            if new_sha == NULL_SHA:  # a work-tree file git has not hashed
                data = _read_outside(git.root, path)
                new_sha = blob_sha(data) if data is not None else new_sha
            if change.old_mode != change.new_mode and change.old_sha == new_sha:
                issues.append(Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, "mode-changed",
                                    f"file mode changed {change.old_mode} → {change.new_mode}; observations are immutable"))
            else:
                issues.append(Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, "modified",
                                    "an existing observation was modified; observations are immutable "
                                    "(add a new observation that `corrects` it)"))
    if edited:
        old = {sha: analyze(c.path, data) for c in edited for sha, data in git.read_blobs([c.old_sha])}
        for change in edited:
            before, after = old[change.old_sha].facts, analyses.get(change.path)
            if before is None or after is None or after.facts is None:
                continue
            issues.extend(_comprehension_edit(change.path, before, after.facts))
    return issues


def _comprehension_edit(path: str, before: dict, after: dict) -> list[Issue]:
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


__all__ = ["CheckRequest", "run_check", "analyze_source", "commit"]
