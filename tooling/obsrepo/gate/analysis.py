"""Reading and analysing a source's documents, through the analysis cache or around it, and
what the rules found of them (`check` of everything, `check --base` of a change)."""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from ..format.analyze import PARALLEL_THRESHOLD, analyze
from ..format.report import Issue
from ..format.rules import Analysis
from ..processes import cores, pool
from .cache import AnalysisCache
from .sources import REGULAR_MODES, Listed, Source


@dataclass
class Judged:
    """What the rules found, before the findings every check shares are added."""

    analyses: dict[str, Analysis]  # the documents judged one by one
    changed: list[Issue]  # immutability (with a base or staged)
    rules: list[Issue]  # repository rules
    read: int  # documents read and analysed (the others came from a cache)
    # the documents' own problems (rules, place, classification), found as each was read, when
    # `analyses` holds only those the repository rules needed whole; None: found from `analyses`
    own: list[Issue] | None = None


def analyze_source(source: Source, cache: AnalysisCache, progress: Callable[[int, int], None] | None = None,
                   fresh: list[Listed] | None = None) -> dict[str, Analysis]:
    """Analyse every regular file of `source`, reusing cached results by blob id; `progress` is
    told how many of the files not in the cache are done, `fresh` given which they are."""
    todo: list[Listed] = []
    analyses = {item.path: hit for item, hit in through_cache(source, cache, todo)}
    if fresh is not None:
        fresh.extend(todo)
    for item, analysis, record in analyzed(source, todo, progress):
        analyses[item.path] = analysis
        cache.put_row(item.path, item.sha, analysis.to_cache(), record)
    return analyses


def through_cache(source: Source, cache: AnalysisCache, todo: list[Listed]) -> Iterator[tuple[Listed, Analysis]]:
    """The regular documents of `source` the cache knows, with their analyses, one at a time;
    the others are appended to `todo`."""
    for item in source.listed:
        if item.mode not in REGULAR_MODES:
            continue
        hit = cache.get(item.path, item.sha)
        if hit is None:
            todo.append(item)
        else:
            yield item, hit


def analyzed(source: Source, todo: list[Listed], progress: Callable[[int, int], None] | None = None,
             ) -> Iterator[tuple[Listed, Analysis, Any]]:
    """Read and analyse `todo` (past `PARALLEL_THRESHOLD` documents in worker processes),
    yielding each document's analysis and record as it is done, none kept."""
    if len(todo) >= PARALLEL_THRESHOLD and cores() > 1:
        results = _analyze_parallel(source, todo)
    else:
        # with the record: the index reuses it (gate/cache.py), so no document is parsed twice
        results = (_with_record(item, analyze(item.path, data, with_record=True)) for item, data in source.read(todo))
    step = max(1, len(todo) // 100)
    for done, result in enumerate(results, 1):
        yield result
        if progress and (done % step == 0 or done == len(todo)):
            progress(done, len(todo))


def _with_record(item: Listed, analysis: Analysis) -> tuple[Listed, Analysis, Any]:
    record, analysis.record = analysis.record_to_cache(), None  # kept in the cache, not in memory
    return item, analysis, record


def _analyze_one(job: tuple[str, bytes]) -> tuple[list, Any]:
    path, data = job
    analysis = analyze(path, data, with_record=True)
    return analysis.to_cache(), analysis.record_to_cache()


READ_CHUNK = 1000  # documents a worker analyses per task (one `git cat-file` for a git source)
IN_FLIGHT = 4  # chunks given to the workers and not yet taken back


def _analyze_chunk(jobs: list[tuple[Listed, bytes]]) -> list[tuple[Listed, list, Any]]:
    """In a worker: analyse a chunk of documents read by the parent."""
    return [(item, *_analyze_one((item.path, data))) for item, data in jobs]


def _analyze_parallel(source: Source, todo: list[Listed]) -> Iterable[tuple[Listed, Analysis, Any]]:
    """Worker processes, one per core, analyse the documents chunk by chunk while this process
    reads the next chunks from the source. The workers come from `processes.pool`: they inherit
    nothing this process holds (a source's closures included, hence the contents are sent)
    and die with it."""
    chunks = (todo[start:start + READ_CHUNK] for start in range(0, len(todo), READ_CHUNK))
    with pool(min(cores(), -(-len(todo) // READ_CHUNK)), gc.disable, preload=(__name__, "obsrepo.format.validate")) as workers:
        # a few chunks in flight, never all: workers that outrun their reader (a busy machine,
        # a slow consumer) would otherwise pile every finished chunk up in this process
        flight: deque[Any] = deque()
        for chunk in islice(chunks, IN_FLIGHT):
            flight.append(workers.apply_async(_analyze_chunk, (list(source.read(chunk)),)))
        while flight:
            done = flight.popleft().get()
            for chunk in islice(chunks, 1):
                flight.append(workers.apply_async(_analyze_chunk, (list(source.read(chunk)),)))
            for item, row, record in done:
                yield item, Analysis.from_cache(item.path, row), record
