"""A cache of per-document analyses, keyed by blob id, kept inside the git directory; shared
by `check` and `index`, so a document is parsed once whichever runs first.

Content-addressed, so an entry can never be stale; keyed also by a digest of the rule code,
so a new version of the rules starts afresh. Two files: `check-cache.marshal` holds what
`check` needs (issues and facts, small, read by every check), `records.marshal` holds each
valid document's full record (what the index stores), read only by the index and only
written when new records came. Entries used by the run are kept, and the others too while
they are fewer than twice as many (the index's history and check's tree overlap; a file
never grows without bound). A file is a header and parts, each a marshalled dict of entries:
the workers of a parallel build marshal their own, which are written out unopened. An analysis
is kept marshalled by itself (bytes, unpacked when asked for; a part from elsewhere may hold
them unpacked): a loaded cache of a million documents is half a gigabyte of bytes rather than
four of lists and dicts. A missing, unreadable, truncated or foreign cache file is simply ignored.

`new` analyses the document it writes: it keeps that analysis (and its record) in a small
third file, `check-cache.written.marshal` (`remember_written`), rewritten whole by each write
rather than the large cache, so the next check or index build finds the document analysed.
A run that rewrites the cache anyway folds the written entries in and removes the small file
(unless a write changed it meanwhile); one that would not rewrite it leaves them where they
are until they are WRITTEN_FOLD many.
"""

from __future__ import annotations

import gc
import hashlib
import marshal
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ..format.rules import Analysis, kind_of, placed
from ..gitstore import Git

# the code whose answers the cache holds (paths under the package): a change to any of them
# discards every cached analysis
_RULE_MODULES = ("format/document.py", "format/scalars.py", "format/subset.py", "format/model.py", "format/rules.py",
                 "times.py", "format/validate.py")


def rules_digest() -> str:
    here = Path(__file__).parent.parent
    digest = hashlib.sha256()
    for name in _RULE_MODULES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cycle collector off for a bulk phase (loading this cache, analysing or indexing a whole
    tree): its millions of plain, acyclic values are freed by reference counting anyway, and each
    collection would walk them all again (a fifth of an index build from the cache at 100k)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_MAGIC = b"obsrepo analysis cache 2\n"


def load_entries(file: Path, digest: str) -> dict:
    """Every entry of a cache file, {} when it is missing, unreadable, foreign or of other rules.
    The file: `_MAGIC`, the marshalled header {"rules": digest, "sizes": [...]}, then one
    marshalled dict of entries a size (a part written by this process, or by a worker of a
    parallel build), merged in order."""
    try:
        # marshal: plain data only, ~10x faster to load than JSON; the file lives inside
        # the git directory, as trusted as the repository's own hooks
        data = memoryview(file.read_bytes())
        if data[: len(_MAGIC)] != _MAGIC:
            return {}
        with paused_gc():
            header = marshal.loads(data[len(_MAGIC) :])
            if header.get("rules") != digest:
                return {}
            entries: dict = {}
            at = len(data) - sum(header["sizes"])
            if at < len(_MAGIC):
                return {}
            for size in header["sizes"]:
                part = marshal.loads(data[at : at + size])
                at += size
                if not isinstance(part, dict):
                    return {}
                entries.update(part)
        return entries
    except (OSError, ValueError, EOFError, KeyError, TypeError, AttributeError):
        return {}


def _size(file: Path) -> int:
    try:
        return file.stat().st_size
    except OSError:
        return 0


Part = bytes | tuple[int, int]  # a marshalled dict of entries, or where it stands in a `Spill`


class Spill:
    """Marshalled parts kept in an unnamed temporary file until the cache is written: the new
    entries of a cold check or build of a million documents would be a gigabyte in memory."""

    def __init__(self) -> None:
        self.handle: IO[bytes] | None = None

    def add(self, data: bytes) -> Part:
        try:
            if self.handle is None:
                self.handle = tempfile.TemporaryFile(prefix="obsrepo-cache-")
            at = self.handle.seek(0, os.SEEK_END)
            self.handle.write(data)
            return at, len(data)
        except OSError:  # no room for a temporary file: kept in memory
            return data

    def read(self, part: Part) -> bytes:
        if isinstance(part, bytes):
            return part
        assert self.handle is not None
        self.handle.seek(part[0])
        return self.handle.read(part[1])


def serialized(digest: str, parts: Sequence[Part], spill: Spill | None = None) -> Iterator[bytes]:
    """The bytes of a cache file: the header, then `parts`, marshalled dicts of entries (see
    `load_entries`), those not in memory read from `spill` one at a time."""
    sizes = [len(part) if isinstance(part, bytes) else part[1] for part in parts]
    yield _MAGIC + marshal.dumps({"rules": digest, "sizes": sizes})
    for part in parts:
        if not isinstance(part, bytes):
            assert spill is not None
            part = spill.read(part)
        yield part


def _store(file: Path, digest: str, parts: Sequence[Part], spill: Spill | None = None) -> None:
    """Write marshalled dicts of entries (see `load_entries`) in place of `file`, atomically."""
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=f".{file.stem}.")
        with os.fdopen(fd, "wb") as handle:
            for chunk in serialized(digest, parts, spill):
                handle.write(chunk)
        os.replace(tmp, file)
    except OSError:
        pass  # a read-only git directory only costs speed


def store_entries(file: Path, digest: str, entries: dict) -> None:
    _store(file, digest, [marshal.dumps(entries)])


def entry_key(path: str, sha: str) -> str:
    """The cache key of the document at `path` with blob `sha`: its kind and its content."""
    return f"{kind_of(path)}:{sha}"


CACHE_BYTES_PER_DOCUMENT = 30_000  # parsing a document costs about what loading this much of the cache does
CACHE_DOCUMENTS = 200_000  # a reader of more documents neither reads nor fills the analysis cache (held whole)


def cache_for(git: Git, documents: int, per_document: int = CACHE_BYTES_PER_DOCUMENT,
              most: int = CACHE_DOCUMENTS) -> AnalysisCache | None:
    """The analysis cache for a reader of `documents` documents when loading it costs less than
    parsing them and they are not so many that the cache, held whole, would outweigh streaming."""
    if documents > most:
        return None
    cache = AnalysisCache.open(git, max_bytes=documents * per_document)
    return None if cache.file is None else cache


WRITTEN_FOLD = 200  # written entries a check folds into the cache even when it would not rewrite it


def remember_written(git: Git, path: str, data: bytes, analysis: Analysis) -> None:
    """Keep `new`'s analysis of the document it wrote at `path` (the bytes `data`): the next
    check or index build finds it analysed. Costs a small file, never the large cache."""
    cache = AnalysisCache.open(git)
    if cache.file is None:
        return
    from ..gitstore import blob_sha

    written = cache.written_file
    entries = load_entries(written, cache.digest)
    if len(entries) >= 10 * WRITTEN_FOLD:  # no check ran for long: start again rather than grow
        entries = {}
    entries[entry_key(path, blob_sha(data))] = [marshal.dumps(analysis.to_cache()), analysis.record_to_cache()]
    store_entries(written, cache.digest, entries)


def _signature(file: Path) -> tuple[int, int] | None:
    try:
        stat = file.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


class AnalysisCache:
    def __init__(self, file: Path | None, entries: dict[str, bytes | list] | None, digest: str) -> None:
        self.file = file
        self._entries = entries  # None: not read yet (a build served by records alone never reads it)
        self.digest = digest
        self.used: dict[str, bytes | list] = {}
        self.dirty = False
        self.missed = 0  # documents asked for and not found: read and analysed by the caller
        self._records: dict[str, Any] | None = None  # loaded on first use
        self.new_records: dict[str, Any] = {}
        self.served: set[str] = set()  # keys whose record was used without reading their analysis
        self.parts: list[tuple[Part, Part, int]] = []  # (analyses, records, count) marshalled elsewhere
        self.spill = Spill()  # where `parts` are kept until saved
        self._written: dict[str, list] | None = None  # what `new` analysed (`remember_written`), loaded on first use
        self._written_as: tuple[int, int] | None = None  # the written file's size and time when loaded

    @classmethod
    def open(cls, git: Git | None, max_bytes: int | None = None) -> AnalysisCache:
        """The repository's cache; a cache left off (nothing read or written) without a git
        repository, with OBSREPO_NO_CACHE, or when its files hold more than `max_bytes`."""
        if git is None or os.environ.get("OBSREPO_NO_CACHE"):
            return cls(None, {}, "")
        try:
            git_dir = git.run("rev-parse", "--absolute-git-dir").decode().strip()
        except Exception:  # a broken repository is reported elsewhere; the cache just stays off
            return cls(None, {}, "")
        file = Path(git_dir) / "obsrepo" / "check-cache.marshal"
        if max_bytes is not None and sum(_size(f) for f in (file, file.with_name("records.marshal"))) > max_bytes:
            return cls(None, {}, "")
        return cls(file, None, rules_digest())

    @property
    def entries(self) -> dict[str, bytes | list]:
        if self._entries is None:
            self._entries = load_entries(self.file, self.digest) if self.file is not None else {}
        return self._entries

    @property
    def records_file(self) -> Path | None:
        return None if self.file is None else self.file.with_name("records.marshal")

    @property
    def written_file(self) -> Path:
        assert self.file is not None
        return self.file.with_name("check-cache.written.marshal")

    @property
    def written(self) -> dict[str, list]:
        """key → [marshalled analysis, record] of the documents `new` wrote."""
        if self._written is None:
            self._written, self._written_as = {}, None
            if self.file is not None:
                self._written_as = _signature(self.written_file)
                found = load_entries(self.written_file, self.digest) if self._written_as is not None else {}
                self._written = {key: value for key, value in found.items()
                                 if isinstance(value, list) and len(value) == 2 and isinstance(value[0], bytes)}
        return self._written

    def get(self, path: str, sha: str) -> Analysis | None:
        key = entry_key(path, sha)
        row = self.entries.get(key)
        if row is None and key in self.written:  # kept by `save` only when it folds them in
            return self._analysis(path, self.written[key][0])
        if row is None:
            self.missed += 1
            return None
        try:
            analysis = Analysis.from_cache(path, marshal.loads(row) if isinstance(row, bytes) else row)
        except (TypeError, ValueError, EOFError):
            self.missed += 1
            return None
        self.used[key] = row
        return analysis

    def _analysis(self, path: str, row: bytes) -> Analysis | None:
        try:
            return Analysis.from_cache(path, marshal.loads(row))
        except (TypeError, ValueError, EOFError):
            self.missed += 1
            return None

    def record(self, path: str, sha: str, raw: bool = False) -> dict[str, Any] | None:
        """The document's record for the index (None when not cached). `raw`: the cached dict
        itself, moments as 1-tuples of UTC microseconds (`Analysis.record_to_cache`), not a copy
        with datetimes: for a reader that converts them itself and changes nothing in it."""
        key = entry_key(path, sha)
        row = self.new_records.get(key)
        if row is None:
            if self._records is None:
                records_file = self.records_file
                self._records = load_entries(records_file, self.digest) if records_file is not None else {}
            row = self._records.get(key)
        if row is None and key in self.written:
            row = self.written[key][1]
        if not isinstance(row, dict):
            return None
        if raw:
            return row if Analysis.cached_moments_ok(row) else None
        try:
            return Analysis.record_from_cache(row)
        except (TypeError, ValueError, OverflowError):
            return None

    def put(self, path: str, sha: str, analysis: Analysis) -> None:
        self.put_row(path, sha, analysis.to_cache(), analysis.record_to_cache())

    def put_row(self, path: str, sha: str, row: list, record: dict[str, Any] | None = None) -> None:
        """`row` from `Analysis.to_cache`, `record` from `Analysis.record_to_cache`."""
        key = entry_key(path, sha)
        self.used[key] = marshal.dumps(row)
        if record is not None:
            self.new_records[key] = record
        self.dirty = True

    def valid_record(self, path: str, sha: str) -> dict[str, Any] | None:
        """The cached record, as stored (see `record`), of a document that passes every
        per-document rule at `path`, or None: a record is only ever cached for a document the
        strict reader and the model accepted, so only the rules of its place remain to check
        (`rules.placed`). The index's build from the cache `check` filled reads no analyses."""
        record = self.record(path, sha, raw=True)
        if record is None or not placed(path, record):
            return None
        self.served.add(entry_key(path, sha))
        return record

    def put_parts(self, analyses: bytes, records: bytes, count: int) -> None:
        """New entries marshalled by another process (a worker of a parallel build): `count`
        analyses keyed by `entry_key` and their records, written out as they are."""
        self.parts.append((self.spill.add(analyses), self.spill.add(records), count))
        self.dirty = True

    def save(self) -> None:
        if self.file is None:
            return
        if self._entries is not None and len(self.written) >= WRITTEN_FOLD:
            self.dirty = True  # many written entries: fold them in now
        if self._entries is None and not self.dirty:
            return  # nothing read, nothing new: the file stays as it is
        folding = self.dirty and bool(self.written)
        for key, (row, record) in self.written.items() if folding else ():
            self.used.setdefault(key, row)
            if isinstance(record, dict):
                self.new_records.setdefault(key, record)
        entries = self.entries
        for key in self.served - self.used.keys():
            if key in entries:
                self.used[key] = entries[key]
        added = sum(count for _, _, count in self.parts)
        keep_all = len(entries) <= 2 * (len(self.used) + added) + 1000
        kept = {**entries, **self.used} if keep_all else self.used
        if self.dirty or len(kept) != len(entries):
            _store(self.file, self.digest, [marshal.dumps(kept), *(part for part, _, _ in self.parts)], self.spill)
        records_file = self.records_file
        if (self.new_records or self.parts) and records_file is not None:
            if self._records is None:
                self._records = load_entries(records_file, self.digest)
            merged = {**self._records, **self.new_records}
            kept_records = marshal.dumps({k: v for k, v in merged.items() if k in kept})
            _store(records_file, self.digest, [kept_records, *(part for _, part, _ in self.parts)], self.spill)
        if folding and _signature(self.written_file) == self._written_as:  # a write since: its entry stays
            try:
                self.written_file.unlink()
            except OSError:
                pass
