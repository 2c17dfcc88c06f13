"""Documents into index rows: parse (or take from the analysis cache) each added version, sort
the results into valid observations, valid comprehensions and problems, and make their rows.
Shared by the build (`build`), the overlay of uncommitted documents and the benchmarks.

Per document this keeps to tuples: a `Parsed` and a `Version` are NamedTuples, which cost what
a tuple costs, on the hot path of a cold build (100,000 documents)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from ..format.analyze import PARALLEL_THRESHOLD, analyze
from ..format.report import Issue
from ..format.rules import kind_of, place
from ..gitstore import Git
from ..processes import cores, pool
from . import history
from .plan import Addition
from .rows import TOKENS
from .schema import RECORD_COLUMNS


class Parsed(NamedTuple):
    """One document read: its problems as rows (line, col, code, rule, message), and its record
    when it is valid."""

    issues: list[list]
    record: Any


class Version(NamedTuple):
    """A valid document version, ready to be a row."""

    file: Addition
    record: dict
    row_id: int


def _parse_job(job: tuple[str, bytes]) -> Parsed:
    path, data = job
    analysis = analyze(path, data, with_record=True)
    issues = analysis.issues + place(path, analysis)
    return Parsed([[i.line, i.col, i.code, i.rule, i.message] for i in issues], analysis.record)


def _parse_all(jobs: list[tuple[str, bytes]]) -> list[Parsed]:
    if len(jobs) >= PARALLEL_THRESHOLD and cores() > 1:
        with pool(min(cores(), -(-len(jobs) // 256)), preload=(__name__, "obsrepo.format.validate")) as workers:
            return workers.map(_parse_job, jobs, chunksize=256)
    return [_parse_job(job) for job in jobs]


def parse_blobs(git: Git, files: list[tuple[str, str]],
                progress: Callable[[int, int], None] | None = None) -> list[Parsed]:
    """Analyse (path, blob) pairs; each result is (issues as rows, record or None)."""
    blobs: dict[str, bytes] = {}
    wanted = sorted({blob for _, blob in files})
    for count, (sha, data) in enumerate(git.read_blobs(wanted), 1):
        blobs[sha] = data
        if progress and count % 5000 == 0:
            progress(count, len(wanted) * 2)
    parsed = _parse_all([(path, blobs[blob]) for path, blob in files])
    if progress:
        progress(len(wanted) * 2, len(wanted) * 2)
    return parsed


def sort_parsed(files: list[Addition], parsed: list[Parsed], first_row: int
                ) -> tuple[list[Version], list[Version], list[tuple], list[Issue]]:
    """Parsed documents sorted out: the valid observations and the valid comprehensions (row ids
    in file order from `first_row`), problem rows, and the problems as warnings."""
    observations: list[Version] = []
    comprehensions: list[Version] = []
    problem_rows: list[tuple] = []
    problems: list[Issue] = []
    for file, (issues, record) in zip(files, parsed):
        path, blob = file.path, file.blob
        if issues:
            for line, col, code, rule, message in issues:
                problem_rows.append((file.added_seq, file.removed_seq, path, blob, line, col, code, rule, message))
                problems.append(Issue(path, line, col, code, rule, message, "warning"))
            continue
        row_id = first_row + len(observations) + len(comprehensions)
        (comprehensions if kind_of(path) == "comprehension" else observations).append(Version(file, record, row_id))
    return observations, comprehensions, problem_rows, problems


def version_row(file: Addition, record: dict, row_id: int, info: dict[str, history.Commit]) -> dict:
    """One row of obs_versions or comp_versions: the record and where and when it was added."""
    meta = info[file.commit]
    return dict(record, row_id=row_id, added_seq=file.added_seq, removed_seq=file.removed_seq, path=file.path,
                blob=file.blob, commit=file.commit, author=meta.author, author_email=meta.author_email,
                committed_at=meta.committed_at)


def rows_for(files: list[Addition], parsed: list[Parsed], first_row: int,
             info: dict[str, history.Commit]) -> tuple[list[dict], list[dict], list[tuple], list[Issue]]:
    """Index rows for parsed documents: observation rows, comprehension rows, problem rows, and
    the problems as warnings."""
    observations, comprehensions, problem_rows, problems = sort_parsed(files, parsed, first_row)
    return ([version_row(*version, info) for version in observations],
            [version_row(*version, info) for version in comprehensions], problem_rows, problems)


def known(cache: Any, path: str, blob: str) -> Parsed | None:
    """(issues as rows, record) from the analysis cache, or None when the document must be parsed."""
    if cache is None:
        return None
    record = cache.valid_record(path, blob)  # the common case: no analysis to read
    if record is not None:
        return Parsed([], record)
    analysis = cache.get(path, blob)
    if analysis is None:
        return None
    issues = analysis.issues + place(path, analysis)
    record = None
    if not issues and analysis.facts is not None:
        record = cache.record(path, blob, raw=True)  # its moments are converted where rows are made (rows.utc)
        if record is None:
            return None
    return Parsed([[i.line, i.col, i.code, i.rule, i.message] for i in issues], record)


def parse_for_cache(path: str, data: bytes) -> tuple[list, Any, list, Any]:
    """Parse one document: (issues as rows, record, its cache row, its record as cached)."""
    analysis = analyze(path, data, with_record=True)
    issues = analysis.issues + place(path, analysis)
    return ([[i.line, i.col, i.code, i.rule, i.message] for i in issues], analysis.record,
            analysis.to_cache(), analysis.record_to_cache())


def index_records(con: Any, table: str, records: str, first_row: int) -> None:
    """The printed columns of the rows from `first_row` on, in row-id order."""
    con.execute(f"INSERT INTO {records} SELECT row_id, {RECORD_COLUMNS} FROM {table} WHERE row_id >= ? ORDER BY row_id",
                [first_row])


def index_terms(con: Any, table: str, terms: str, first_row: int, doclen: str | None = None,
                ordered: bool = True) -> None:
    """Terms for BM25, stemmed by the fts extension (each distinct token once), and lengths
    (into `doclen`, by default the `terms` table's twin). `ordered`: stored by term, unless the
    caller stores them by term itself later (`load.BatchLoader`)."""
    tokens = TOKENS.format("event || ' ' || body")
    con.execute(f"CREATE OR REPLACE TEMP TABLE new_tokens AS SELECT row_id, unnest({tokens}) AS token "
                f"FROM {table} WHERE row_id >= ?", [first_row])
    con.execute("CREATE OR REPLACE TEMP TABLE new_stems AS SELECT token, stem(token, 'porter') AS term "
                "FROM (SELECT DISTINCT token FROM new_tokens WHERE token <> '')")
    con.execute(f"INSERT INTO {terms} SELECT t.row_id, s.term, count(*)::INTEGER FROM new_tokens t "
                f"JOIN new_stems s USING (token) GROUP BY ALL{' ORDER BY 2, 1' if ordered else ''}")
    con.execute(f"INSERT INTO {doclen or terms.replace('terms', 'doclen')} "
                "SELECT row_id, count(*)::INTEGER FROM new_tokens WHERE token <> '' GROUP BY row_id")
    con.execute("DROP TABLE new_tokens")
    con.execute("DROP TABLE new_stems")
