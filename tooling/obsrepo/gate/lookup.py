"""A base tree's documents by key: what a pull request's check asks of the rest of the tree.

`check --base B` judges the documents the change touches; the repository rules ask of the rest
only lookups (is this id taken, this content recorded, this entity known, who retracts, who
relates to X, the edges a walk of one relation type follows). Listing and loading the compact
facts of a million documents for each pull request costs seconds and hundreds of megabytes, so
each base tree gets a lookup store: an SQLite file (the standard library's) holding every
document's compact facts (`facts.py`) indexed by id, content hash, entity and relation, read
only for the keys asked (docs/design.md §2.7).

It also keeps what the check's report and its listing need of the tree beyond its documents:
its symlinks and submodules, how many documents it has, its folders and `.gitattributes`
files, and, once a check found none, that git converts none of its documents under the
attribute files outside the tree as they were then (`attributes`: their digest). So a check
whose change leaves every `.gitattributes` alone lists and asks git about what it touches only.

It is valid for exactly one tree (its id is in the name and in the file) and one version of
the rules; it is built by the first check against that base (from the facts store, reading
only the blobs it does not know) and written atomically (a temporary file, then a rename). A
file that is missing, damaged or of other rules is ignored and built again. The caller leaves
out the paths its change touches: a deleted, renamed or edited document's keys no longer count.

A kept-open writer (the MCP server) holds its store open across writes. A store found damaged
under it (a query fails, or the file changed on disk and no longer validates) is built again
from git and the answer asked again, once: the writer heals rather than failing every call
until it is restarted (docs/design.md §8b "A kept-open writer heals").
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from ..format.rules import kind_of
from ..gitstore import Entry, Git
from .analysis import analyzed
from .cache import cache_for
from .facts import Compact, FactsStore, blob_key, expand
from .sources import DOCUMENT_ROOTS, REGULAR_MODES, Listed, entries

FORMAT = "lookup 2"
KEPT = 3  # lookup stores kept in the folder (the newest): other bases' are removed as new ones are built
_CHUNK = 500  # keys a statement (SQLite's limit on parameters is far above)
_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
CREATE TABLE docs(path TEXT PRIMARY KEY, id TEXT, hash BLOB, entity TEXT, retracts INTEGER, compact BLOB);
CREATE TABLE edges(kind TEXT, entity TEXT, target TEXT, path TEXT);
CREATE TABLE tree(path TEXT PRIMARY KEY, mode TEXT, sha TEXT) WITHOUT ROWID;
CREATE TABLE folders(path TEXT PRIMARY KEY) WITHOUT ROWID;
"""
_INDEXES = """
CREATE INDEX docs_id ON docs(id);
CREATE INDEX docs_hash ON docs(hash) WHERE hash IS NOT NULL;
CREATE INDEX docs_entity ON docs(entity) WHERE entity IS NOT NULL;
CREATE INDEX docs_retracts ON docs(retracts) WHERE retracts;
CREATE INDEX edges_from ON edges(kind, entity);
CREATE INDEX edges_to ON edges(target);
"""


class BaseLookup:
    """The lookup store of one base tree, minus the paths `gone` (those the change touches)."""

    def __init__(self, db: sqlite3.Connection, gone: AbstractSet[str], read: int, file: Path | None = None,
                 paths: list[str] | None = None, rebuild: Callable[[], tuple[sqlite3.Connection, Path | None]] | None = None,
                 digest: str = "") -> None:
        self.db = db
        self.gone = gone
        self.read = read  # documents read from git to build it (0 when it was there)
        self.file = file  # where it is kept (None: in memory)
        self.paths = paths  # the tree's regular files, when this run built it
        self._rebuild = rebuild  # the store built again from git (None: it cannot be)
        self._digest = digest
        self._seen = _signature(file)  # the file as it was when opened: changed on disk, validated again
        self.rebuilt = 0  # times a damaged store was built again under this object

    @classmethod
    def open(cls, git: Git, base_sha: str, facts: FactsStore, gone: AbstractSet[str],
             progress: Callable[[int, int], None] | None = None) -> BaseLookup:
        tree = git.run("rev-parse", f"{base_sha}^{{tree}}").decode().strip()
        found = cls.kept_tree(tree, facts, git)
        if found is not None:
            found.gone = gone
            return found
        digest, file = _named(facts, tree)
        db, read, paths, kept = _build(git, base_sha, facts, file, digest, progress)
        return cls(db, gone, read, kept, paths, _rebuilder(git, tree), digest)

    @classmethod
    def kept(cls, git: Git, base_sha: str, facts: FactsStore) -> BaseLookup | None:
        """The store of the base tree when one is kept and valid (nothing is built)."""
        return cls.kept_tree(git.run("rev-parse", f"{base_sha}^{{tree}}").decode().strip(), facts, git)

    @classmethod
    def kept_tree(cls, tree: str, facts: FactsStore, git: Git | None = None) -> BaseLookup | None:
        """The store of the tree whose id is `tree`, when one is kept and valid (with `git`, one
        that builds itself again when found damaged later)."""
        digest, file = _named(facts, tree)
        db = _valid(file, digest) if file is not None else None
        if db is None:
            return None
        return cls(db, frozenset(), 0, file, rebuild=_rebuilder(git, tree) if git is not None else None, digest=digest)

    def _ask(self, question: Callable[[], Any]) -> Any:
        """`question`'s answer from the store; a store damaged on disk is built again (or the
        one another process put in its place opened) and asked again, once."""
        if self.file is not None and self._rebuild is not None and _signature(self.file) not in (self._seen, None):
            self._reopen()  # changed on disk since opened: the new file if valid, else built again
        try:
            return question()
        except _DAMAGED:
            if self._rebuild is None:
                raise
        self._heal()
        return question()

    def _reopen(self) -> None:
        assert self.file is not None
        db = _valid(self.file, self._digest)
        if db is None:
            self._heal()
            return
        self.db.close()
        self.db, self._seen = db, _signature(self.file)

    def _heal(self) -> None:
        assert self._rebuild is not None
        self.db.close()
        self.db, self.file = self._rebuild()
        self._seen = _signature(self.file)
        self.rebuilt += 1

    def holds(self, doc_id: str) -> bool:
        """Whether a valid document of the tree (but those `gone`) has this id."""
        return self._ask(lambda: any(path not in self.gone for (path,) in
                                     self.db.execute("SELECT path FROM docs WHERE id = ?", (doc_id,))))

    def having(self, column: str, key: str) -> list[tuple[str, dict[str, Any]]]:
        """The valid documents (but those `gone`) whose id or content hash (`column`) is `key`, by path."""
        assert column in ("id", "hash")
        value: Any = bytes.fromhex(key) if column == "hash" else key

        def ask() -> list[tuple[str, dict[str, Any]]]:
            rows = self.db.execute(f"SELECT path, compact FROM docs WHERE {column} = ? ORDER BY path", (value,)).fetchall()
            return [(path, expand(marshal.loads(compact))) for path, compact in rows  # type: ignore[misc]
                    if path not in self.gone]

        return self._ask(ask)

    def meta(self, key: str) -> str | None:
        found = self._ask(lambda: self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone())
        return found[0] if found else None

    def remember(self, key: str, value: str) -> None:
        """Keep `value` under `key` in the file (a fact of this tree found after it was built)."""
        if self.file is None:
            return
        try:
            with contextlib.closing(sqlite3.connect(self.file)) as db, db:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            self._seen = _signature(self.file)  # our own change
        except sqlite3.Error:  # read-only: found again next time
            pass

    def not_files(self) -> list[tuple[str, str, str]]:
        """(path, mode, sha) of the tree's symlinks and submodules under the document folders."""
        return self._ask(lambda: self.db.execute("SELECT path, mode, sha FROM tree WHERE mode NOT IN ('100644', '100755') "
                                                 "AND path != '.gitattributes'").fetchall())

    def attribute_files(self) -> dict[str, str]:
        """The tree's `.gitattributes` files under the document folders and at its root, by path."""
        return dict(self._ask(lambda: self.db.execute("SELECT path, sha FROM tree WHERE mode IN ('100644', '100755')")
                              .fetchall()))

    def folders(self) -> list[str]:
        """Every folder holding one of the tree's files under the document folders, and those
        above them ("" the root)."""
        return self._ask(lambda: [path for (path,) in self.db.execute("SELECT path FROM folders")])

    def matching(self, ids: set[str], hashes: set[str], entities: set[str], relation_targets: set[str],
                 paths: AbstractSet[str], leave_out: AbstractSet[str]) -> list[tuple[str, dict[str, Any]]]:
        """The documents `facts.matching` would give over the whole tree: those with one of these
        ids, content hashes or entities, every retraction, every document relating to one of
        `relation_targets`, and those at `paths`, as facts."""
        asks: list[tuple[str, Iterable[Any]]] = [
            ("SELECT path, compact FROM docs WHERE id IN ({})", ids),
            ("SELECT path, compact FROM docs WHERE hash IN ({})", [bytes.fromhex(h) for h in hashes]),
            ("SELECT path, compact FROM docs WHERE entity IN ({})", entities),
            ("SELECT path, compact FROM docs WHERE path IN ({})", paths),
            ("SELECT path, compact FROM docs WHERE path IN (SELECT path FROM edges WHERE target IN ({}))",
             relation_targets)]
        skip = self.gone | leave_out

        def ask() -> list[tuple[str, dict[str, Any]]]:
            found: dict[str, bytes] = {}
            for sql, keys in asks:
                found.update(self._rows(sql, keys))
            found.update(self.db.execute("SELECT path, compact FROM docs WHERE retracts").fetchall())
            return [(path, expand(marshal.loads(found[path]))) for path in sorted(found)  # type: ignore[misc]
                    if path not in skip]

        return self._ask(ask)

    def reached(self, starts: dict[str, set[str]]) -> set[str]:
        """The documents whose edges (of each type of `starts`) a walk from its entities follows
        (see `pull._reached`), asked entity by entity."""
        paths: set[str] = set()
        for kind, entities in starts.items():
            seen, todo = set(entities), sorted(entities)
            while todo:
                for target, path in self.steps(kind, todo.pop()):
                    paths.add(path)
                    if target not in seen:
                        seen.add(target)
                        todo.append(target)
        return paths

    def steps(self, kind: str, entity: str) -> list[tuple[str, str]]:
        """(target, path) of the edges of type `kind` from `entity` (but those of `gone` paths)."""
        return self._ask(lambda: [(target, path) for target, path in
                                  self.db.execute("SELECT target, path FROM edges WHERE kind = ? AND entity = ?",
                                                  (kind, entity)) if path not in self.gone])

    def _rows(self, sql: str, keys: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        keys = list(keys)
        for at in range(0, len(keys), _CHUNK):
            part = keys[at:at + _CHUNK]
            yield from self.db.execute(sql.format(",".join("?" * len(part))), part)


# what a damaged store raises: SQLite's corruption (and I/O) errors, or a compact row that no
# longer unmarshals
_DAMAGED = (sqlite3.DatabaseError, ValueError, EOFError, TypeError)


def _signature(file: Path | None) -> tuple[int, int, int, int] | None:
    """The file's identity and last change (None: no file, or gone: an open store stays whole)."""
    try:
        info = file.stat() if file is not None else None
    except OSError:
        return None
    return None if info is None else (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _rebuilder(git: Git, tree: str) -> Callable[[], tuple[sqlite3.Connection, Path | None]]:
    """Build the store of `tree` again, from git (with the facts and analyses kept, where whole)."""

    def rebuild() -> tuple[sqlite3.Connection, Path | None]:
        facts = FactsStore.open(git)
        digest, file = _named(facts, tree)
        db, _read, _paths, kept = _build(git, tree, facts, file, digest, None)
        facts.save()
        return db, kept

    return rebuild


def _named(facts: FactsStore, tree: str) -> tuple[str, Path | None]:
    """(the digest a valid store of the tree `tree` holds: of these rules, this format, this
    tree; its file: None when nothing is kept)."""
    digest = f"{facts.digest or 'off'}-{FORMAT}-{tree}"
    return digest, None if facts.file is None else facts.file.with_name(f"lookup-{tree}.sqlite")


def _valid(file: Path, digest: str) -> sqlite3.Connection | None:
    """The store in `file` when it is whole and of these rules and this tree, else None."""
    if not file.is_file():
        return None
    try:
        # a kept-open writer's requests run on any thread, one at a time
        db = sqlite3.connect(f"{file.as_uri()}?mode=ro", uri=True, check_same_thread=False)
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        # whole: as long as its header says (a truncated copy is not), its last row where the
        # count of rows says (rows are numbered as written; a count would read every row's key)
        pages, size = (db.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "page_size"))
        if meta.get("digest") != digest or file.stat().st_size != pages * size \
                or str(db.execute("SELECT max(rowid) FROM docs").fetchone()[0] or 0) != meta.get("docs"):
            db.close()
            return None
        return db
    except (sqlite3.Error, OSError):  # damaged, truncated, not a database: built again
        return None


def _build(git: Git, base_sha: str, facts: FactsStore, file: Path | None, digest: str,
           progress: Callable[[int, int], None] | None) -> tuple[sqlite3.Connection, int, list[str], Path | None]:
    """The store of the base tree, from the facts store (blobs it does not know are read and
    learnt), written to `file` atomically; in memory only when there is no file to keep. With
    it, the tree's regular files under the document folders, and the file it was written to."""
    everything = [e for e in git.ls_tree(base_sha, *DOCUMENT_ROOTS, ":(literal).gitattributes")
                  if not e.path.endswith("/.gitkeep")]
    listed = [e for e in everything if e.mode in REGULAR_MODES and e.path != ".gitattributes"]
    tree = _tree(everything)
    unknown = [e for e in listed if facts.get(blob_key(kind_of(e.path), e.sha)) is None]
    learnt: dict[str, Compact] = {}  # the store may keep nothing (no git directory, OBSREPO_NO_CACHE)
    cache = cache_for(git, len(unknown)) if unknown else None
    if cache is not None:  # what `check` or `index` analysed before: their facts, without parsing again
        left = []
        for e in unknown:
            hit = cache.get(e.path, e.sha)
            if hit is None:
                left.append(e)
            else:
                learnt[e.path] = facts.learn(blob_key(kind_of(e.path), e.sha), hit.facts)
        unknown = left
    for item, analysis, _record in analyzed(entries(git, unknown), [Listed(e.path, e.sha, e.mode) for e in unknown],
                                            progress):
        learnt[item.path] = facts.learn(blob_key(kind_of(item.path), item.sha), analysis.facts)

    def documents() -> Iterator[tuple[str, Compact | None]]:
        for e in listed:
            yield e.path, learnt[e.path] if e.path in learnt else facts.get(blob_key(kind_of(e.path), e.sha))

    if file is not None:
        temporary = ""
        try:
            file.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=file.parent, prefix=".lookup-", suffix=".sqlite")
            os.close(fd)
            db = sqlite3.connect(temporary)
            _fill(db, documents(), tree, digest)
            db.close()
            os.replace(temporary, file)
            _prune(file)
            kept = sqlite3.connect(f"{file.as_uri()}?mode=ro", uri=True, check_same_thread=False)
            return kept, len(unknown), [e.path for e in listed], file
        except (OSError, sqlite3.Error):  # a read-only git directory only costs speed: built again next time
            if temporary:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
    db = sqlite3.connect(":memory:", check_same_thread=False)
    _fill(db, documents(), tree, digest)
    return db, len(unknown), [e.path for e in listed], None


def _tree(everything: list[Entry]) -> tuple[list[tuple[str, str, str]], set[str], int]:
    """Of a tree's entries: its symlinks, submodules and attribute files, the folders of the
    others and those above them, and how many documents it has."""
    kept = [(e.path, e.mode, e.sha) for e in everything
            if e.mode not in REGULAR_MODES or e.path == ".gitattributes" or e.path.endswith("/.gitattributes")]
    folders = {""}
    counted = 0
    for e in everything:
        if e.mode in REGULAR_MODES and e.path != ".gitattributes":
            counted += kind_of(e.path) != "other"
            folder = e.path.rpartition("/")[0]
            while folder not in folders:
                folders.add(folder)
                folder = folder.rpartition("/")[0]
    return kept, folders, counted


def _fill(db: sqlite3.Connection, documents: Iterable[tuple[str, Compact | None]],
          tree: tuple[list[tuple[str, str, str]], set[str], int], digest: str) -> None:
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    db.executescript(_SCHEMA)
    counted = [0]
    edges: list[tuple[str, str, str, str]] = []

    def rows() -> Iterator[tuple[Any, ...]]:  # streamed: a million rows are never held at once
        for path, compact in documents:
            if not compact:  # invalid: the repository rules skip it
                continue
            assert isinstance(compact, tuple)
            counted[0] += 1
            if len(compact) == 1:
                yield path, compact[0], None, None, 0, marshal.dumps(compact)
                continue
            doc_id, content, entity, _tenant, special = compact
            yield path, doc_id, content, entity, 1 if special and special[2] else 0, marshal.dumps(compact)
            for kind, target in special[3] if special else ():
                edges.append((kind, entity, target, path))

    db.executemany("INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?)", rows())
    db.executemany("INSERT INTO edges VALUES (?, ?, ?, ?)", edges)
    kept, folders, documents_count = tree
    db.executemany("INSERT INTO tree VALUES (?, ?, ?)", kept)
    db.executemany("INSERT INTO folders VALUES (?)", [(folder,) for folder in folders])
    db.executescript(_INDEXES)
    db.executemany("INSERT INTO meta VALUES (?, ?)",
                   [("digest", digest), ("docs", str(counted[0])), ("documents", str(documents_count))])
    db.commit()


def _prune(file: Path) -> None:
    """Keep the newest `KEPT` lookup stores: a base's store is of use while pull requests are made on it."""
    try:
        stores = sorted(file.parent.glob("lookup-*.sqlite"), key=lambda f: f.stat().st_mtime, reverse=True)
        for old in stores[KEPT:]:
            if old != file:
                old.unlink()
    except OSError:
        pass


__all__ = ["BaseLookup"]
