"""Build or update the index from git objects (never the work tree).

A full build and an update run the same code: find how much of the stored first-parent
chain the target's chain still shares, undo what lies beyond it (a branch that moved
backwards or was force-pushed), then apply each new chain commit's changes in order.
The writer works on a private copy and publishes it atomically (see `generations`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ..errors import IndexFault
from ..format.analyze import PARALLEL_THRESHOLD
from ..format.report import Issue
from ..gitstore import Git
from ..processes import warm
from .adding import WORKER_MODULES, add, touch
from .engine import damage_errors
from .entity_table import refresh_snapshots
from .generations import publish
from .identity_table import refresh_identity
from .keyed import close_keyed
from .paths import unwritable
from .plan import UpdatePlan, plan_update
from .rows import SMALL_BATCH, insert_rows, utc
from .schema import DROP_INDEXES, FORMAT_VERSION, INDEXES, NOW, TABLES, VIEWS
from .vectors import EmbedderSource, behind, refresh_vectors
from .weights import refresh_weights
from .writer import IndexFiles, open_writer


@dataclass
class BuildResult:
    commit: str
    full: bool
    added: int = 0
    removed: int = 0
    commits: int = 0
    problems: list[Issue] = field(default_factory=list)
    # how the update went, for the entity snapshots (not printed)
    keep: int = -1  # the last chain position shared with the stored index
    since: str | None = None  # the chain commit at `keep`
    truncated: bool = False  # commits after `keep` were forgotten
    schemas_changed: bool = False  # an entity schema changed on the way
    touched: set = field(default_factory=set)  # entities of observations added or removed
    touched_special: bool = False  # a retraction or a merge was added or removed
    parsed: int = 0  # documents read from git and parsed
    reused: int = 0  # documents whose analysis came from the cache `check` shares (gate/cache.py)
    unchanged: bool = False  # the index was already there: nothing published
    discarded: bool = False  # --strict found problems: the previous index stays published
    semantic: dict[str, Any] | None = None  # with an embedder: {fingerprint, embedded, pending, error}

    def as_dict(self) -> dict[str, Any]:
        shown = {
            "commit": self.commit, "full": self.full, "added": self.added, "removed": self.removed,
            "commits": self.commits, "problems": [p.as_dict() for p in self.problems],
        }
        return shown if self.semantic is None else shown | {"semantic": self.semantic}


@dataclass(frozen=True, slots=True)
class BuildContext:
    """What one build works with, fixed for its whole run."""

    git: Git
    files: IndexFiles
    target: str  # the commit to bring the index to (a full sha)
    full: bool = False  # rebuild from git, reusing nothing stored
    strict: bool = False  # a document with problems discards the build
    progress: Callable[[int, int], None] | None = None
    embedder: EmbedderSource | None = None  # recall's embedder, loaded when first needed (vectors.py)


class StrictFailure(Exception):
    """Raised inside the writer to discard the private copy under --strict."""


def build(git: Git, files: IndexFiles, target: str, full: bool = False,
          progress: Callable[[int, int], None] | None = None, strict: bool = False,
          embedder: EmbedderSource | None = None) -> BuildResult:
    """Bring the index to commit `target` (a full sha) and publish it; with `embedder`, with the
    vectors of its texts (vectors.py)."""
    import time

    from ..gate.cache import paused_gc

    _warm_up_validation()
    started = time.time()
    with paused_gc():
        result = _build_locked(BuildContext(git, files, target, full, strict, progress, embedder))
    if not result.unchanged:
        record_update(files.path, result, started)
    return result


def record_update(path: str, result: BuildResult, started: float) -> None:
    """The status sidecar (`obsrepo status`): what the last update did, when, and how long."""
    import time
    from datetime import datetime, timezone

    from .paths import status_path, write_json

    ended = time.time()
    write_json(status_path(path), {
        "commit": result.commit, "full": result.full, "added": result.added, "removed": result.removed,
        "commits": result.commits, "published": not result.discarded,
        "updated_at": datetime.fromtimestamp(ended, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "duration_ms": round((ended - started) * 1000, 1),
    })


def _build_locked(build: BuildContext) -> BuildResult:
    files, target = build.files, build.target
    with files.writer_lock():
        early = None if build.full else files.early_copy()
        try:
            existing = None if build.full else files.current_commit_chain()
            if existing and existing[-1] == target:
                if not files.intact():
                    existing = None  # a damaged block somewhere: rebuild from git
                elif not behind(build.git, files.path, build.embedder):
                    return BuildResult(target, False, unchanged=True)  # already there: nothing published
            if existing is None and early is not None:  # nothing to copy from: a build from git
                _drop(files, early)
                early = None
            try:
                return _write(build, existing, early)
            except damage_errors() as exc:
                if existing is None:
                    raise IndexFault(f"the index could not be written: {exc}", path=files.path) from None
            return _write(build, None)  # the copy held damaged blocks
        finally:
            if early is not None:  # used (renamed away: nothing left), or not: removed
                _drop(files, early)


def _drop(files: IndexFiles, early: Future[str]) -> None:
    """Wait for a private copy started early and remove it (a failed copy leaves nothing)."""
    with contextlib.suppress(Exception):
        files.discard(early.result())


def _warm_up_validation() -> None:
    """Import the validator (pydantic, ~80 ms) on a thread while this one waits on git and
    DuckDB, which release the interpreter; the first document then finds it loaded."""
    import sys
    import threading

    if "obsrepo.format.validate" not in sys.modules:
        threading.Thread(target=__import__, args=("obsrepo.format.validate",), daemon=True).start()


def _write(build: BuildContext, existing: list[str] | None, early: Future[str] | None = None) -> BuildResult:
    """`early`: the private copy of `existing`, started by the caller."""
    import duckdb

    git, files, target = build.git, build.files, build.target
    try:
        work = early.result() if early is not None else files.private_copy(existing is not None)
        con = open_writer(work)
    except (OSError, duckdb.IOException) as exc:
        raise unwritable(files.path, exc if isinstance(exc, OSError) else OSError(str(exc))) from None
    try:
        con.execute(TABLES if existing is None else DROP_INDEXES)
        plan = plan_update(git, existing, target)
        if len(plan.additions) >= PARALLEL_THRESHOLD:  # the worker pool starts while the rest is set up
            warm(WORKER_MODULES)
        result = apply_plan(git, con, plan, build.progress)
        if build.strict and result.problems:
            raise StrictFailure
        result.semantic = refresh_vectors(git, con, build.embedder, update=existing is not None)
        refresh_snapshots(git, con, target, result)
        refresh_identity(git, con, target)
        refresh_weights(git, con, target)
        if existing is None:
            con.execute(VIEWS)  # a copy of the same format has them already
        con.execute(INDEXES)
        con.execute("INSERT OR REPLACE INTO meta VALUES ('commit', ?), ('format_version', ?)", [target, FORMAT_VERSION])
        con.execute("CHECKPOINT")
    except StrictFailure:
        con.close()
        files.discard(work)
        result.discarded = True
        return result
    except BaseException:
        con.close()
        files.discard(work)
        raise
    con.close()
    try:
        publish(work, files.path)
    except OSError as exc:
        files.discard(work)
        raise unwritable(files.path, exc) from None
    return result


def apply_plan(git: Git, con: Any, plan: UpdatePlan, progress: Callable[[int, int], None] | None = None) -> BuildResult:
    """Carry out `plan` in the writer's connection (the snapshot table is refreshed by the caller)."""
    result = BuildResult(plan.target, plan.full, keep=plan.keep, since=plan.since, truncated=plan.truncate,
                         schemas_changed=plan.schemas_changed, commits=len(plan.commits))
    if plan.truncate:
        _truncate(con, plan.keep)
    con.execute("DELETE FROM commits WHERE seq > ?", [plan.keep])
    if not plan.commits:
        return result
    _insert_commits(con, plan.keep, plan.commits)
    result.removed = _remove(con, plan.removals, result)
    result.added, result.problems = add(git, con, plan.additions, plan.info, progress, result)
    return result


def _insert_commits(con: Any, keep: int, appended: list) -> None:
    if len(appended) <= SMALL_BATCH:
        con.executemany("INSERT INTO commits VALUES (?, ?, ?, ?, ?)", [
            [keep + 1 + i, c.sha, utc(c.committed_at), c.author, c.author_email] for i, c in enumerate(appended)])
        return
    import pyarrow as pa

    con.register("new_commits", pa.table({
        "seq": pa.array(range(keep + 1, keep + 1 + len(appended)), pa.int32()),
        "sha": [c.sha for c in appended],
        "committed_at": pa.array([utc(c.committed_at) for c in appended], pa.timestamp("us")),
        "author": [c.author for c in appended],
        "author_email": [c.author_email for c in appended],
    }))
    con.execute("INSERT INTO commits SELECT * FROM new_commits")
    con.unregister("new_commits")


def _truncate(con: Any, keep: int) -> None:
    """Forget every chain commit after `keep`: the branch moved backwards or was rewritten."""
    for table in ("obs_versions", "comp_versions"):
        if table == "obs_versions":
            for side in ("obs_records", "obs_terms", "obs_doclen", "obs_vectors", "obs_texts", "obs_keys"):
                con.execute(f"DELETE FROM {side} WHERE row_id IN (SELECT row_id FROM obs_versions WHERE added_seq > ?)", [keep])
        con.execute(f"DELETE FROM {table} WHERE added_seq > ?", [keep])
        con.execute(f"UPDATE {table} SET removed_seq = {NOW} WHERE removed_seq > ? AND removed_seq <> {NOW}", [keep])
    con.execute(f"UPDATE obs_keys SET removed_seq = {NOW} WHERE removed_seq > ? AND removed_seq <> {NOW}", [keep])
    con.execute("DELETE FROM problems WHERE added_seq > ?", [keep])
    con.execute(f"UPDATE problems SET removed_seq = {NOW} WHERE removed_seq > ? AND removed_seq <> {NOW}", [keep])


def _remove(con: Any, removals: list[tuple[str, int]], result: BuildResult) -> int:
    """Close the visibility range of each path's current version at the commit that removed it."""
    if not removals:
        return 0
    con.execute("CREATE OR REPLACE TEMP TABLE removed (path VARCHAR NOT NULL, seq INTEGER NOT NULL)")
    insert_rows(con, "removed", ["path", "seq"], [{"path": path, "seq": seq} for path, seq in removals])
    count = 0
    for table in ("obs_versions", "comp_versions", "problems"):
        returning = " RETURNING t.entity, t.special" if table == "obs_versions" else ""
        changed = con.execute(
            f"UPDATE {table} AS t SET removed_seq = r.seq FROM removed r "
            f"WHERE t.path = r.path AND t.removed_seq = {NOW} AND t.added_seq < r.seq{returning}"
        ).fetchall()
        if table == "obs_versions":
            if changed:
                close_keyed(con)
            touch(result, changed)
            count += len(changed)
        elif table == "comp_versions" and changed:
            count += changed[0][0]
    con.execute("DROP TABLE removed")
    return count
