"""`obsrepo check`: per-document rules, repository rules and immutability, as one report."""

from __future__ import annotations

import gc
import os
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from .. import errors
from ..errors import UsageError
from ..format.analyze import analyze
from ..format.report import Issue, Report
from ..format.rules import Analysis, kind_of, place
from ..format.vocabulary import ENTITY_SCHEMAS_DIR
from ..gitstore import NULL_SHA, Change, Entry, Git
from . import attributes, graph
from .attributes import ATTRIBUTES, attribute_issues, index_reader, worktree_reader
from .cache import AnalysisCache, paused_gc
from .sources import DOCUMENT_ROOTS, REGULAR_MODES, Listed, Source, commit, not_a_file, staged, worktree_in_git

PARALLEL_THRESHOLD = 2000


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
        raise UsageError("--staged and --base cannot be combined", parameter="--staged")
    base_sha = None
    if request.base is not None:
        base_sha = git.merge_base(git.resolve(request.base, "--base"), git.resolve("HEAD", "--base")) \
            if git.has_head() else git.resolve(request.base, "--base")
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
    source, converted = _source(git, plan)
    cache = AnalysisCache.open(git)
    analyses = analyze_source(source, cache, progress)
    report = Report()
    _check_outside(plan, analyses, report)
    changed: list[Issue] = []
    added = None
    if plan.immutability:
        changed, added = _immutability(git, plan.base_sha, source, analyses, cache)
    cache.save()
    # the attributes git applies to the documents: when it commits the index (--staged), or
    # when it reads and writes the work tree (.gitattributes at any depth, info/attributes)
    reader = index_reader(git) if plan.staged else worktree_reader(git)
    changed = _first_of_each(changed + attribute_issues(git, converted, reader))
    reported = {(i.path, i.rule) for i in changed}
    for item in source.listed:
        if item.mode not in REGULAR_MODES and (item.path, not_a_file(item.path, item.mode).rule) not in reported:
            report.issues.append(not_a_file(item.path, item.mode))
    for path, analysis in analyses.items():
        report.issues.extend(analysis.issues)
        report.issues.extend(place(path, analysis))
    report.issues.extend(graph.repository_rules(analyses, added))
    report.issues.extend(graph.classification_warnings(analyses))
    report.issues.extend(_entity_schemas(plan.root))
    report.issues.extend(_retention(plan.root))
    report.issues.extend(changed)

    if plan.wanted is None:
        report.checked += sum(1 for p in analyses if kind_of(p) != "other")
    else:
        # immutability and attributes concern the change as a whole: a deleted or renamed-away
        # path, or a .gitattributes, is never among the names pre-commit passes for documents
        report.checked += len(plan.wanted & set(analyses))
        gone = {i.path for i in changed if i.code == errors.IMMUTABLE_VIOLATION}  # said once: deleted, not missing
        report.issues = [i for i in report.issues
                         if (i.path in plan.wanted and not (i.rule == "file-missing" and i.path in gone))
                         or i.code == errors.IMMUTABLE_VIOLATION or i.rule == attributes.RULE]
    return report


def _source(git: Git, plan: CheckPlan) -> tuple[Source, list[tuple[str, str, str]]]:
    """Where the documents come from, and the documents git would convert: those are hashed
    from their raw bytes rather than trusted from git's stat data (git compares through filters)."""
    converted: list[tuple[str, str, str]] = []
    if plan.staged:
        source = staged(git)
        converted = git.check_attr(_documents(source), ATTRIBUTES, cached=True)
        return source, converted

    def rehash(paths: list[str]) -> Iterable[str]:
        converted.extend(git.check_attr(paths, ATTRIBUTES))
        return paths if _autocrlf(git) else {path for path, _, _ in converted}

    return worktree_in_git(git, rehash), converted


def _check_outside(plan: CheckPlan, analyses: dict[str, Analysis], report: Report) -> None:
    """Paths asked for that the source does not list (outside the document folders, missing)."""
    for path in sorted(plan.wanted - set(analyses)) if plan.wanted is not None else ():
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


def analyze_source(source: Source, cache: AnalysisCache,
                   progress: Callable[[int, int], None] | None = None) -> dict[str, Analysis]:
    """Analyse every regular file of `source`, reusing cached results by blob id; `progress` is
    told how many of the files not in the cache are done."""
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
        results = _analyze_parallel(source, todo)
    else:
        # with the record: the index reuses it (gate/cache.py), so no document is parsed twice
        results = (_with_record(item, analyze(item.path, data, with_record=True)) for item, data in source.read(todo))
    step = max(1, len(todo) // 100)
    for done, (item, analysis, record) in enumerate(results, 1):
        analyses[item.path] = analysis
        cache.put_row(item.path, item.sha, analysis.to_cache(), record)
        if progress and (done % step == 0 or done == len(todo)):
            progress(done, len(todo))
    return analyses


def _with_record(item: Listed, analysis: Analysis) -> tuple[Listed, Analysis, Any]:
    record, analysis.record = analysis.record_to_cache(), None  # kept in the cache, not in memory
    return item, analysis, record


def _analyze_one(job: tuple[str, bytes]) -> tuple[list, Any]:
    path, data = job
    analysis = analyze(path, data, with_record=True)
    return analysis.to_cache(), analysis.record_to_cache()


READ_CHUNK = 1000  # documents a worker reads and analyses per task (one `git cat-file` for a git source)
_FORKED: list[Source] = []  # the source forked workers read from


def _analyze_chunk(items: list[Listed]) -> list[tuple[Listed, list, Any]]:
    """In a forked worker: read `items` from the source and analyse them."""
    return [(item, *_analyze_one((item.path, data))) for item, data in _FORKED[0].read(items)]


def _analyze_parallel(source: Source, todo: list[Listed]) -> Iterable[tuple[Listed, Analysis, Any]]:
    """Two worker processes analyse the documents. Forked workers read their own share (no
    contents through pipes, reading overlaps analysing); spawned ones are sent the contents."""
    import multiprocessing

    if not hasattr(os, "fork"):
        listed = list(source.read(todo))
        with multiprocessing.get_context("spawn").Pool(min(2, os.cpu_count() or 1)) as pool:
            rows = pool.imap(_analyze_one, [(item.path, data) for item, data in listed], chunksize=256)
            for (item, _), (row, record) in zip(listed, rows):  # in order, as each chunk is done (progress moves)
                yield item, Analysis.from_cache(item.path, row), record
        return
    chunks = [todo[start:start + READ_CHUNK] for start in range(0, len(todo), READ_CHUNK)]
    _FORKED[:] = [source]
    try:
        with multiprocessing.get_context("fork").Pool(min(2, os.cpu_count() or 1), initializer=gc.disable) as pool:
            for done in pool.imap(_analyze_chunk, chunks):  # workers end with the job: no collector
                for item, row, record in done:
                    yield item, Analysis.from_cache(item.path, row), record
    finally:
        _FORKED.clear()


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


ATTRIBUTE_FILES = (".gitattributes", ":(glob)**/.gitattributes")


def _immutability(git: Git, base_sha: str | None, source: Source, analyses: dict[str, Analysis],
                  cache: AnalysisCache) -> tuple[list[Issue], set[str]]:
    """Issues of the change, and the documents it adds (preferred as the duplicate to report).

    With a base: every commit of base..HEAD against its parents (git objects, as stored), then
    the work tree against HEAD. Staged: git's index against HEAD. And the git attributes of
    every commit of the range that touched a .gitattributes."""
    judge = _Judge()
    attribute_commits: list[str] = []
    head = "HEAD" if git.has_head() else None
    if base_sha is not None:
        commits = git.commits_between(base_sha) if head else []
        pairs = [(sha, p) for sha, parents in commits for p in (parents or (None,))]
        blocks = iter(git.diff_trees(pairs, *DOCUMENT_ROOTS, *ATTRIBUTE_FILES))
        for sha, parents in commits:
            per_parent = [next(blocks) for _ in (parents or (None,))]
            judge.commit(sha, per_parent)
            if any(_is_attributes(c.path) for block in per_parent for c in block):
                attribute_commits.append(sha)
        before = {e.path for e in git.ls_tree(base_sha, *DOCUMENT_ROOTS)}
    ref = head or base_sha
    reference = git.ls_tree(ref, *DOCUMENT_ROOTS) if ref else []
    if base_sha is None:
        before = {e.path for e in reference}
    judge.changes(_listing_changes(reference, source.listed), "")
    issues = judge.issues + _comprehension_edits(git, judge.edits, analyses, cache)

    for sha in attribute_commits:
        issues.extend(_attributes_at(git, sha))
    return issues, {item.path for item in source.listed} - before


def _attributes_at(git: Git, sha: str) -> list[Issue]:
    """The git-attributes rule on the tree of commit `sha` (read into a temporary index)."""
    with tempfile.TemporaryDirectory(prefix="obsrepo-") as tmp:
        at = git.with_index(os.path.join(tmp, "index"))
        at.run("read-tree", sha)
        documents = [e.path for e in at.ls_files(*DOCUMENT_ROOTS) if e.mode in REGULAR_MODES]
        found = at.check_attr(documents, ATTRIBUTES, cached=True)
        return attribute_issues(at, found, index_reader(at), commit=sha)


def _documents(source: Source) -> list[str]:
    return [item.path for item in source.listed if item.mode in REGULAR_MODES]


def _autocrlf(git: Git) -> bool:
    """core.autocrlf converts line endings of every text file, attributes or not."""
    value = git.run("config", "--get", "core.autocrlf", check=False).strip().lower()
    return value not in (b"", b"false", b"no", b"off", b"0")


def _is_attributes(path: str) -> bool:
    return path == ".gitattributes" or path.endswith("/.gitattributes")


def _first_of_each(issues: list[Issue]) -> list[Issue]:
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


def _listing_changes(reference: list[Entry], listed: list[Listed]) -> list[Change]:
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


class _Judge:
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


def _comprehension_edits(git: Git, edits: list[tuple[Change, str]], analyses: dict[str, Analysis],
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


__all__ = ["CheckRequest", "run_check", "analyze_source", "commit"]
