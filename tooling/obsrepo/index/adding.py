"""Adding a plan's document versions to the index, in bounded memory.

Documents go slice by slice: each slice is read from git (unless the analysis cache `check`
shares knows it), validated, turned into rows and loaded before the next is read, so a build
holds one slice of documents, never the whole repository (docs/design.md §5). Many documents
are validated by worker processes (one per core), chunk by chunk; a few are parsed here and inserted
with plain parameters, which spares loading pyarrow.
"""

from __future__ import annotations

import marshal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from ..format.analyze import PARALLEL_THRESHOLD
from ..format.report import Issue
from ..format.rules import kind_of
from ..gate.cache import CACHE_BYTES_PER_DOCUMENT, CACHE_DOCUMENTS, cache_for
from ..gitstore import Git
from ..processes import cores, pool
from . import history
from .columns import COMP_COLUMNS, OBS_COLUMNS
from .documents import Parsed, Version, index_records, index_terms, known, parse_for_cache, sort_parsed, version_row
from .keyed import add_keyed
from .load import FLUSH_ROWS, BatchLoader
from .plan import Addition
from .rows import PLAIN_LIMIT, insert_rows, observation_batch

CHUNK = 1000  # documents per task of the parallel path
# what a worker imports to parse its chunks: the fork server imports it once, so each worker
# starts with it loaded, as a forked one would. Only modules that start no thread: pyarrow and
# pandas start some (jemalloc's, a thread pool), and a server forked with a thread running
# hangs its workers; each worker imports those itself
WORKER_MODULES = (__name__, "obsrepo.format.validate", "obsrepo.gate.cache")
IN_FLIGHT = 6  # chunks the workers may hold or have sent ahead of the loading


@dataclass(slots=True)
class Adding:
    """What adding one plan's documents works with (the writer's connection, the commits' authors
    and times, the first free row id, the analysis cache or None, the result being filled)."""

    git: Git
    con: Any
    info: dict[str, history.Commit]
    first_row: int
    progress: Callable[[int, int], None] | None
    result: Any
    cache: Any


@dataclass(slots=True)
class _Slice:
    """One slice's rows: an Arrow batch of observation rows or plain observation versions,
    comprehension rows, problem rows, the problems as warnings, and how many rows it used."""

    observations: Any
    comprehensions: list[dict]
    problem_rows: list[tuple]
    problems: list[Issue]
    count: int


def touch(result: Any, rows: Iterable[tuple[Any, Any]]) -> None:
    """Note the entities whose observations came or went, and whether a special one did."""
    for entity, special in rows:
        if entity is not None:
            result.touched.add(entity)
        result.touched_special = result.touched_special or bool(special)


def open_cache(git: Git, additions: int) -> Any:
    """The analysis cache `check` shares, unless it is much larger than the build needs: an
    update adding a few documents parses them (~0.15 ms each) rather than load and rewrite a
    cache of 100,000 (about a second), and its few entries never crowd out the ones `check`
    keeps. None (off) for a build of more than CACHE_DOCUMENTS: the cache holds all its entries
    in memory (a million records are gigabytes), which a streamed build must not."""
    return cache_for(git, additions, CACHE_BYTES_PER_DOCUMENT, CACHE_DOCUMENTS)


def add(git: Git, con: Any, additions: list[Addition], info: dict[str, history.Commit],
        progress: Callable[[int, int], None] | None, result: Any) -> tuple[int, list[Issue]]:
    """Add the versions of `additions` (rows, terms, problems); (rows added, problems)."""
    additions = [a for a in additions if kind_of(a.path) != "other"]
    if not additions:
        return 0, []
    first_row = con.execute(
        "SELECT coalesce(max(row_id), -1) + 1 FROM (SELECT row_id FROM obs_versions UNION ALL SELECT row_id FROM comp_versions)"
    ).fetchone()[0]
    cache = open_cache(git, len(additions))
    adding = Adding(git, con, info, first_row, progress, result, cache)
    parsed: list[Any] = [known(cache, a.path, a.blob) for a in additions]
    todo = sum(hit is None for hit in parsed)
    result.parsed, result.reused = todo, len(additions) - todo
    parallel = todo >= PARALLEL_THRESHOLD and cores() > 1
    many = parallel or len(additions) > PLAIN_LIMIT  # Arrow batches (the workers always send them)
    slices = _in_parallel(adding, additions, parsed) if parallel else _in_process(adding, additions, parsed, many)
    problems: list[Issue] = []
    loader = BatchLoader(con) if many else None
    row = first_row
    try:
        for part in slices:
            _load(adding, loader, part, row)
            problems += part.problems
            row += part.count
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="obsrepo-cache") as saver:
            saving = saver.submit(cache.save) if cache is not None else None  # while DuckDB sorts
            if loader is not None:
                loader.finish()
            if saving is not None:
                saving.result()
    except BaseException:
        if loader is not None:
            loader.close()
        raise
    if loader is not None:
        touch(result, loader.touched)
    if progress:
        progress(len(additions), len(additions))
    return row - first_row, problems


def _load(adding: Adding, loader: BatchLoader | None, part: _Slice, first_row: int) -> None:
    """Load one slice whose row ids start at `first_row`."""
    con = adding.con
    if loader is not None:
        if part.observations is not None:
            loader.add(part.observations)
    elif part.observations:  # a few (an update): plain parameters
        obs_rows = [version_row(file, record, row_id, adding.info) for file, record, row_id in part.observations]
        insert_rows(con, "obs_versions", OBS_COLUMNS, obs_rows)
        touch(adding.result, ((row["entity"], row["special"]) for row in obs_rows))
        index_terms(con, "obs_versions", "obs_terms", first_row)
        index_records(con, "obs_versions", "obs_records", first_row)
        add_keyed(con, "obs_versions", first_row)
    insert_rows(con, "comp_versions", COMP_COLUMNS, part.comprehensions)
    if part.problem_rows:
        con.executemany("INSERT INTO problems VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", part.problem_rows)


def _in_process(adding: Adding, additions: list[Addition], parsed: list[Any], many: bool) -> Iterator[_Slice]:
    """Slices parsed in this process (few documents to parse, or one processor)."""
    git, cache, progress = adding.git, adding.cache, adding.progress
    row = adding.first_row
    for start in range(0, len(additions), FLUSH_ROWS):
        files, done = additions[start:start + FLUSH_ROWS], parsed[start:start + FLUSH_ROWS]
        todo = [i for i, hit in enumerate(done) if hit is None]
        wanted = sorted({files[i].blob for i in todo})
        blobs = dict(git.read_blobs(wanted)) if wanted else {}
        for i in todo:
            path, blob = files[i].path, files[i].blob
            issues, record, cache_row, cached_record = parse_for_cache(path, blobs[blob])
            if cache is not None:
                cache.put_row(path, blob, cache_row, cached_record)
            done[i] = Parsed(issues, record)
        del blobs
        observations, comprehensions, problem_rows, problems = sort_parsed(files, done, row)
        count = len(observations) + len(comprehensions)
        yield _Slice(_batch(observations, adding.info) if many else observations,
                     [version_row(*version, adding.info) for version in comprehensions], problem_rows, problems, count)
        row += count
        if progress:
            progress(min(start + FLUSH_ROWS, len(additions)), len(additions))


def _batch(observations: list[Version], info: dict[str, history.Commit]) -> Any:
    return observation_batch(observations, info) if observations else None


_CHUNK_STATE: dict = {}


def _chunk_worker_init(root: str, info: dict, keep: bool) -> None:
    import gc

    from .engine import refuse_pandas

    gc.disable()  # a worker lives for one build (see gate.cache.paused_gc)
    refuse_pandas()
    # its git process ends with the worker
    _CHUNK_STATE.update(reader=Git(root).blob_reader(), info=info, keep=keep)


def _chunk(job: tuple[list[Addition], list[Any]]) -> tuple[Any, list[dict], list[tuple], list[Issue], int, tuple[bytes, bytes, int]]:
    """In a worker: read the chunk's documents the cache does not know from git, validate them
    and turn the chunk into an Arrow batch of observation rows (row ids counted from 0; the
    parent shifts them), comprehension rows, problems, and the new cache entries (when the
    build keeps them)."""
    from ..gate.cache import entry_key

    files, parsed = job
    todo = [i for i, hit in enumerate(parsed) if hit is None]
    contents = _CHUNK_STATE["reader"].read([files[i].blob for i in todo]) if todo else []
    keep = _CHUNK_STATE["keep"]
    analyses, records = {}, {}
    for i, data in zip(todo, contents):
        path, blob = files[i].path, files[i].blob
        issues, record, row, cached_record = parse_for_cache(path, data)
        parsed[i] = Parsed(issues, record)
        if keep:
            key = entry_key(path, blob)
            analyses[key] = row
            if cached_record is not None:
                records[key] = cached_record
    info = _CHUNK_STATE["info"]
    observations, comprehensions, problem_rows, problems = sort_parsed(files, parsed, 0)
    comp_rows = [version_row(*version, info) for version in comprehensions]
    # the new cache entries go out as the cache file stores them: the parent never unpacks them
    fresh = (marshal.dumps(analyses), marshal.dumps(records), len(analyses))
    return _batch(observations, info), comp_rows, problem_rows, problems, len(observations) + len(comprehensions), fresh


def _in_parallel(adding: Adding, additions: list[Addition], parsed: list[Any]) -> Iterator[_Slice]:
    """Worker processes (one per core, started by `processes.pool`) each read a chunk of blobs from git (those the cache does not know),
    validate it and return an Arrow batch, at most IN_FLIGHT chunks ahead of the loading. With
    a cache, the workers send the new analyses marshalled (`AnalysisCache.put_parts`), written
    out unopened when the build ends."""
    starts = range(0, len(additions), CHUNK)
    window = threading.Semaphore(IN_FLIGHT)

    def chunks() -> Iterator[tuple[list[Addition], list[Any]]]:  # run by the pool's feeding thread
        for start in starts:
            window.acquire()  # released as results are taken: workers never run far ahead of the loading
            yield additions[start:start + CHUNK], parsed[start:start + CHUNK]

    keep = adding.cache is not None
    with pool(min(cores(), len(starts)), _chunk_worker_init, (adding.git.root, adding.info, keep),
              preload=WORKER_MODULES) as workers:
        try:
            yield from _gather(adding, workers.imap(_chunk, chunks()), window, len(additions))
        finally:
            window.release(len(starts))  # a feeder still waiting ends, so the pool can close


def _gather(adding: Adding, results: Iterator[tuple], window: threading.Semaphore, total: int) -> Iterator[_Slice]:
    """The workers' chunks, row ids shifted, gathered into slices of about FLUSH_ROWS rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    gathered = _Slice([], [], [], [], 0)
    offset, done = adding.first_row, 0
    for batch, comps, chunk_problems, issues, count, fresh in results:
        window.release()
        if fresh[2] and adding.cache is not None:
            adding.cache.put_parts(*fresh)
        if batch is not None:
            shifted = pc.add(batch.column("row_id"), pa.scalar(offset, pa.int64()))
            gathered.observations.append(batch.set_column(0, "row_id", shifted))
        for row in comps:
            row["row_id"] += offset
        gathered.comprehensions += comps
        gathered.problem_rows += chunk_problems
        gathered.problems += issues
        gathered.count += count
        offset += count
        done += CHUNK
        if adding.progress:
            adding.progress(min(done, total), total)
        if gathered.count >= FLUSH_ROWS:
            yield _gathered(gathered)
            gathered = _Slice([], [], [], [], 0)
    if gathered.count or gathered.problem_rows:
        yield _gathered(gathered)


def _gathered(part: _Slice) -> _Slice:
    import pyarrow as pa

    part.observations = pa.concat_tables(part.observations) if part.observations else None
    return part
