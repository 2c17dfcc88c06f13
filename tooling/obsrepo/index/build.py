"""Build or update the index from git objects (never the work tree).

A full build and an update run the same code: find how much of the stored first-parent
chain the target's chain still shares, undo what lies beyond it (a branch that moved
backwards or was force-pushed), then apply each new chain commit's changes in order.
The writer works on a private copy and publishes it atomically (see `generations`).
"""

from __future__ import annotations

import contextlib
import marshal
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from ..errors import IndexFault
from ..format.analyze import PARALLEL_THRESHOLD
from ..format.report import Issue
from ..format.rules import kind_of
from ..gitstore import Git
from . import history
from .columns import COMP_COLUMNS, OBS_COLUMNS
from .documents import Parsed, index_records, index_terms, known, parse_for_cache, sort_parsed, version_row
from .engine import damage_errors
from .entity_table import refresh_snapshots
from .generations import publish
from .paths import unwritable
from .plan import Addition, UpdatePlan, plan_update
from .rows import PLAIN_LIMIT, SMALL_BATCH, insert_rows, observation_batch, text_batch, utc
from .schema import FORMAT_VERSION, NOW, RECORD_COLUMNS, TABLES, VIEWS
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


@dataclass(slots=True)
class _Adding:
    """What adding one plan's documents works with (the writer's connection, the commits' authors
    and times, the first free row id, the analysis cache, the result being filled)."""

    git: Git
    con: Any
    info: dict[str, history.Commit]
    first_row: int
    progress: Callable[[int, int], None] | None
    result: BuildResult
    cache: Any


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
        if existing is None:
            con.execute(TABLES)
        result = apply_plan(git, con, plan_update(git, existing, target), build.progress)
        if build.strict and result.problems:
            raise StrictFailure
        result.semantic = refresh_vectors(git, con, build.embedder)
        refresh_snapshots(git, con, target, result)
        refresh_weights(git, con, target)
        if existing is None:
            con.execute(VIEWS)  # a copy of the same format has them already
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
    result.added, result.problems = _add(git, con, plan.additions, plan.info, progress, result)
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
            for side in ("obs_records", "obs_terms", "obs_doclen", "obs_texts"):
                con.execute(f"DELETE FROM {side} WHERE row_id IN (SELECT row_id FROM obs_versions WHERE added_seq > ?)", [keep])
        con.execute(f"DELETE FROM {table} WHERE added_seq > ?", [keep])
        con.execute(f"UPDATE {table} SET removed_seq = {NOW} WHERE removed_seq > ? AND removed_seq <> {NOW}", [keep])
    con.execute("DELETE FROM problems WHERE added_seq > ?", [keep])
    con.execute(f"UPDATE problems SET removed_seq = {NOW} WHERE removed_seq > ? AND removed_seq <> {NOW}", [keep])


def _touch(result: BuildResult, rows: Any) -> None:
    for entity, special in rows:
        if entity is not None:
            result.touched.add(entity)
        result.touched_special = result.touched_special or bool(special)


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
            _touch(result, changed)
            count += len(changed)
        elif table == "comp_versions" and changed:
            count += changed[0][0]
    con.execute("DROP TABLE removed")
    return count


CACHE_BYTES_PER_DOCUMENT = 30_000  # parsing a document costs about what loading this much of the cache does


def _open_cache(git: Git, additions: int) -> Any:
    """The analysis cache `check` shares, unless it is much larger than the build needs: an
    update adding a few documents parses them (~0.15 ms each) rather than load and rewrite a
    cache of 100,000 (about a second), and its few entries never crowd out the ones `check`
    keeps."""
    from ..gate.cache import AnalysisCache

    return AnalysisCache.open(git, max_bytes=additions * CACHE_BYTES_PER_DOCUMENT)


def _add(git: Git, con: Any, additions: list[Addition], info: dict[str, history.Commit],
         progress: Callable[[int, int], None] | None, result: BuildResult) -> tuple[int, list[Issue]]:
    additions = [a for a in additions if kind_of(a.path) != "other"]
    if not additions:
        return 0, []
    first_row = con.execute(
        "SELECT coalesce(max(row_id), -1) + 1 FROM (SELECT row_id FROM obs_versions UNION ALL SELECT row_id FROM comp_versions)"
    ).fetchone()[0]
    cache = _open_cache(git, len(additions))
    adding = _Adding(git, con, info, first_row, progress, result, cache)
    parsed: list[Any] = [known(cache, a.path, a.blob) for a in additions]
    todo = [i for i, hit in enumerate(parsed) if hit is None]
    result.parsed, result.reused = len(todo), len(additions) - len(todo)
    if len(todo) >= PARALLEL_THRESHOLD and (os.cpu_count() or 1) > 1:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="obsrepo-cache") as saver:
            return _add_in_parallel(adding, additions, parsed, saver)
    wanted = sorted({additions[i].blob for i in todo})
    blobs = dict(git.read_blobs(wanted)) if wanted else {}
    for count, i in enumerate(todo, 1):
        path, blob = additions[i].path, additions[i].blob
        issues, record, row, cached_record = parse_for_cache(path, blobs[blob])
        cache.put_row(path, blob, row, cached_record)
        parsed[i] = Parsed(issues, record)
        if progress and count % 5000 == 0:
            progress(count, len(additions))
    if progress:
        progress(len(additions), len(additions))
    cache.save()
    observations, comprehensions, problem_rows, problems = sort_parsed(additions, parsed, first_row)
    if len(observations) > PLAIN_LIMIT:  # many (a build from the cache `check` filled): one Arrow batch
        text = text_batch(observations)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="obsrepo-terms") as side:
            terms = side.submit(_terms_beside, con, text, first_row)  # while the rest of the batch is made
            _insert_batch(con, observation_batch(observations, info, text), first_row, result, terms)
    elif observations:  # a few (an update): plain parameters spare loading pyarrow
        obs_rows = [version_row(*version, info) for version in observations]
        insert_rows(con, "obs_versions", OBS_COLUMNS, obs_rows)
        _touch(result, ((row["entity"], row["special"]) for row in obs_rows))
        index_terms(con, "obs_versions", "obs_terms", first_row)
        index_records(con, "obs_versions", "obs_records", first_row)
    insert_rows(con, "comp_versions", COMP_COLUMNS, [version_row(*version, info) for version in comprehensions])
    if problem_rows:
        con.executemany("INSERT INTO problems VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", problem_rows)
    return len(observations) + len(comprehensions), problems


def _insert_batch(con: Any, batch: Any, first_row: int, result: BuildResult, terms: Future[None] | None = None) -> None:
    """Load an Arrow table of obs_versions rows (row ids from `first_row`): the printed records
    in row-id order, the rows stored by entity (one entity's rows sit together), and their terms,
    made on a second connection at the same time (`terms`, when the caller started it already):
    the terms are ~40 % of the load and share little with the rest. The batch comes in row-id
    order (row ids are given in the order documents are sorted out, chunk after chunk)."""
    quoted = ", ".join(f'"{c}"' for c in OBS_COLUMNS)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="obsrepo-terms") as side:
        if terms is None:
            terms = side.submit(_terms_beside, con, batch.select(["row_id", "event", "body"]), first_row)
        con.register("incoming", batch)
        try:
            # already in row-id order, which an insert keeps (DuckDB's preserve_insertion_order): no sort
            con.execute(f"INSERT INTO obs_records SELECT row_id, {RECORD_COLUMNS} FROM incoming")
            con.execute(f"INSERT INTO obs_versions ({quoted}) SELECT {quoted} FROM incoming "
                        "ORDER BY coalesce(entity, chr(65535)), id")
            _touch(result, con.execute("SELECT DISTINCT entity, special FROM incoming").fetchall())
        except BaseException:
            wait([terms])  # the first failure is the one reported
            raise
        finally:
            con.unregister("incoming")
        terms.result()


def _terms_beside(con: Any, text: Any, first_row: int) -> None:
    """BM25 terms of `text` (row_id, event, body) on a second connection to the writer's file."""
    side = con.sibling()
    try:
        side.register("incoming_text", text)
        index_terms(side, "incoming_text", "obs_terms", first_row)
    finally:
        side.close()


CHUNK = 1000  # documents per task of the parallel path
_CHUNK_STATE: dict = {}


def _chunk_worker_init(root: str, info: dict) -> None:
    import gc

    gc.disable()  # a worker lives for one build (see gate.cache.paused_gc)
    _CHUNK_STATE.update(reader=Git(root).blob_reader(), info=info)  # its git process ends with the worker


def _chunk(job: tuple[list[Addition], list[Any]]) -> tuple[Any, list[dict], list[tuple], list[Issue], int, tuple[bytes, bytes, int]]:
    """In a worker: read the chunk's documents the cache does not know from git, validate them
    and turn the chunk into an Arrow batch of observation rows (row ids counted from 0; the
    parent shifts them), comprehension rows, problems, and the new cache entries."""
    from ..gate.cache import entry_key

    files, parsed = job
    todo = [i for i, hit in enumerate(parsed) if hit is None]
    contents = _CHUNK_STATE["reader"].read([files[i].blob for i in todo]) if todo else []
    analyses, records = {}, {}
    for i, data in zip(todo, contents):
        path, blob = files[i].path, files[i].blob
        issues, record, row, cached_record = parse_for_cache(path, data)
        parsed[i] = Parsed(issues, record)
        key = entry_key(path, blob)
        analyses[key] = row
        if cached_record is not None:
            records[key] = cached_record
    info = _CHUNK_STATE["info"]
    observations, comprehensions, problem_rows, problems = sort_parsed(files, parsed, 0)
    batch = observation_batch(observations, info) if observations else None
    comp_rows = [version_row(*version, info) for version in comprehensions]
    # the new cache entries go out as the cache file stores them: the parent never unpacks them
    fresh = (marshal.dumps(analyses), marshal.dumps(records), len(analyses))
    return batch, comp_rows, problem_rows, problems, len(observations) + len(comprehensions), fresh


def _add_in_parallel(adding: _Adding, additions: list[Addition], parsed: list[Any],
                     saver: ThreadPoolExecutor) -> tuple[int, list[Issue]]:
    """Two worker processes each read a chunk of blobs from git (those the cache does not know),
    validate it and return an Arrow batch; the parent only shifts row ids, loads, and keeps the
    new analyses in the cache: the workers send them marshalled (`AnalysisCache.put_parts`), and
    `saver`'s thread writes them out (~130 MB at 100,000) while DuckDB loads."""
    import multiprocessing

    import pyarrow as pa
    import pyarrow.compute as pc

    git, con, first_row, progress, cache = adding.git, adding.con, adding.first_row, adding.progress, adding.cache
    chunks = [(additions[start:start + CHUNK], parsed[start:start + CHUNK]) for start in range(0, len(additions), CHUNK)]
    tables, comp_rows, problem_rows, problems = [], [], [], []
    offset, done = first_row, 0
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    with context.Pool(min(2, os.cpu_count() or 1), initializer=_chunk_worker_init, initargs=(git.root, adding.info)) as pool:
        for batch, comps, chunk_problems, issues, count, fresh in pool.imap(_chunk, chunks):
            if fresh[2]:
                cache.put_parts(*fresh)
            if batch is not None:
                shifted = pc.add(batch.column("row_id"), pa.scalar(offset, pa.int64()))
                tables.append(batch.set_column(0, "row_id", shifted))
            for row in comps:
                row["row_id"] += offset
            comp_rows += comps
            problem_rows += chunk_problems
            problems += issues
            offset += count
            done += CHUNK
            if progress:
                progress(min(done, len(additions)), len(additions))
    saving = saver.submit(cache.save)
    if tables:
        _insert_batch(con, pa.concat_tables(tables), first_row, adding.result)
    saving.result()
    insert_rows(con, "comp_versions", COMP_COLUMNS, comp_rows)
    if problem_rows:
        con.executemany("INSERT INTO problems VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", problem_rows)
    return offset - first_row, problems




