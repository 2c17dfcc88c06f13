"""Where documents come from: the work tree, git's index (staged), or a commit.

Each source lists (path, blob id) pairs under `observations/` and `comprehension/` and reads
contents on demand, so the per-document cache (keyed by blob id) can skip what it knows.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from .. import errors
from ..format.report import Issue
from ..format.rules import kind_of
from ..format.vocabulary import DOCUMENT_ROOTS  # noqa: F401 - re-exported
from ..gitstore import Entry, Git, blob_sha

REGULAR_MODES = ("100644", "100755")


def not_a_file(path: str, mode: str) -> Issue:
    """The problem of a symlink (mode 120000) or a submodule (160000) among the documents."""
    if mode == "160000":
        return Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, "submodule",
                     "a submodule under the document folders; documents are regular files")
    return Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, "symlink",
                 "a symlink under the document folders; documents are regular files")


class Listed(NamedTuple):
    """A document of a source (a tuple: a source may list a million)."""

    path: str
    sha: str
    mode: str  # git mode text; "120000" symlink, "160000" submodule


class Rest(NamedTuple):
    """The part of a work tree a source does not list, where it is a base tree's (`pull.py`):
    what the report counts of it, kept with that tree's lookups."""

    not_files: list[Listed]  # its symlinks and submodules
    documents: int  # its regular files that are documents


class Source:
    """A snapshot of the document folders: every file (`listed`), or those near a base tree
    and the `rest`, which is that tree's."""

    def __init__(self, listed: list[Listed], reader: Callable[[list[Listed]], Iterator[tuple[Listed, bytes]]],
                 hashed: frozenset[str] | None = None, rest: Rest | None = None):
        self.listed = sorted(listed, key=lambda item: item.path)
        self._reader = reader
        # a work tree's paths whose blob id git's index does not vouch for: hashed from their
        # bytes (changed, untracked, converted by attributes) or gone from the work tree; None:
        # not a work tree read through git's index
        self.hashed = hashed
        self.rest = rest

    def read(self, items: Iterable[Listed]) -> Iterator[tuple[Listed, bytes]]:
        return self._reader([i for i in items if i.mode in REGULAR_MODES])

    def only(self, items: list[Listed]) -> Source:
        """These of its documents, read the same way."""
        return Source(items, self._reader, self.hashed)

    def not_files(self) -> list[Listed]:
        """Its symlinks and submodules, by path."""
        found = [item for item in self.listed if item.mode not in REGULAR_MODES]
        return found if self.rest is None else sorted(found + self.rest.not_files)

    def documents(self) -> int:
        """How many of its regular files are documents (observations, comprehensions)."""
        listed = sum(1 for i in self.listed if i.mode in REGULAR_MODES and kind_of(i.path) != "other")
        return listed + (self.rest.documents if self.rest is not None else 0)


def worktree(root: str) -> Source:
    """Every file under the document folders as it is on disk, committed or not."""
    found: list[Listed] = []
    contents: dict[str, bytes] = {}
    for top in DOCUMENT_ROOTS:
        base = os.path.join(root, top)
        if not os.path.isdir(base) or os.path.islink(base):
            if os.path.islink(base):
                found.append(Listed(top, "", "120000"))
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            for name in list(dirnames):
                full = os.path.join(dirpath, name)
                if os.path.islink(full):
                    found.append(Listed(f"{rel_dir}/{name}", "", "120000"))
                    dirnames.remove(name)
                elif os.path.exists(os.path.join(full, ".git")):
                    found.append(Listed(f"{rel_dir}/{name}", "", "160000"))
                    dirnames.remove(name)
            for name in filenames:
                if name == ".gitkeep":  # keeps an empty folder in git; not a document
                    continue
                full = os.path.join(dirpath, name)
                rel = f"{rel_dir}/{name}"
                st = os.lstat(full)
                if stat.S_ISLNK(st.st_mode):
                    found.append(Listed(rel, "", "120000"))
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                with open(full, "rb") as handle:
                    data = handle.read()
                contents[rel] = data
                mode = "100755" if st.st_mode & 0o111 else "100644"
                found.append(Listed(rel, blob_sha(data), mode))

    def reader(items: list[Listed]) -> Iterator[tuple[Listed, bytes]]:
        for item in items:
            yield item, contents[item.path]

    return Source(found, reader)


# given the paths where the work tree differs from git's index: git's index entries there and
# wherever else the listing may differ from a base tree, and that tree's part (the rest); None:
# the whole index is listed
NearListing = Callable[[list[str]], "tuple[list[Entry], Rest] | None"]


def worktree_in_git(git: Git, rehash: Callable[[list[str]], Iterable[str]] | None = None,
                    near: NearListing | None = None) -> Source:
    """The work tree as git sees it: files git knows unchanged are taken at their index blob id
    (no read, no hash); changed and untracked files are read from disk. Much faster than
    reading every file when the analysis cache already knows most blobs. With `near`, only
    the paths it names are listed, the rest is a base tree's (`Source.rest`).

    git's "unchanged" compares content through its filters (clean, ident, eol conversion), so
    `rehash`, given the regular files, names those to read and hash from their raw bytes anyway."""
    root = git.root
    changed, untracked = git.run_together(  # git's stat pass over the tracked files, its walk for the others
        ("diff-files", "-z", "--name-only", "--", *DOCUMENT_ROOTS),
        ("ls-files", "-z", "-o", "--exclude-standard", "--", *DOCUMENT_ROOTS))
    named = [rel for rel in (raw.decode("utf-8", "surrogateescape") for raw in changed.split(b"\0") + untracked.split(b"\0") if raw)
             if not (rel.endswith("/.gitkeep") or rel == ".gitkeep")]
    found = near(named) if near is not None else None
    entries, rest = found if found is not None else (git.ls_files(*DOCUMENT_ROOTS), None)
    listed: dict[str, Listed] = {}
    for entry in entries:
        if not entry.path.endswith("/.gitkeep"):
            listed[entry.path] = Listed(entry.path, entry.sha, entry.mode)
    gone: set[str] = set()
    contents: dict[str, bytes] = {}
    for rel in named:
        full = os.path.join(root, rel)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            listed.pop(rel, None)  # deleted in the work tree
            gone.add(rel)
            continue
        if stat.S_ISLNK(st.st_mode):
            listed[rel] = Listed(rel, "", "120000")
        elif stat.S_ISDIR(st.st_mode):
            listed[rel] = Listed(rel, "", "160000")  # a nested repository
        elif stat.S_ISREG(st.st_mode):
            with open(full, "rb") as handle:
                data = handle.read()
            contents[rel] = data
            listed[rel] = Listed(rel, blob_sha(data), "100755" if st.st_mode & 0o111 else "100644")

    if rehash is not None:
        for rel in rehash(sorted(p for p, item in listed.items() if item.mode in REGULAR_MODES)):
            full = os.path.join(root, rel)
            if rel in contents or not os.path.isfile(full) or os.path.islink(full):
                continue
            with open(full, "rb") as handle:
                data = handle.read()
            contents[rel] = data
            listed[rel] = Listed(rel, blob_sha(data), "100755" if os.lstat(full).st_mode & 0o111 else "100644")

    def reader(items: list[Listed]) -> Iterator[tuple[Listed, bytes]]:
        for start in range(0, len(items), GIT_SLICE):
            part = items[start:start + GIT_SLICE]
            blobs = _vouched_blobs(git, [item for item in part if item.path not in contents])
            for item in part:
                data = contents.get(item.path)
                if data is None:
                    data = blobs.get(item.sha)
                if data is None:
                    with open(os.path.join(root, item.path), "rb") as handle:
                        data = handle.read()
                yield item, data

    return Source(list(listed.values()), reader, frozenset(contents) | gone, rest)


GIT_READ_FROM = 64  # documents git vouches for from which a read asks git's object store for them
GIT_SLICE = 1000  # documents read together (one `git cat-file` each), so a read never holds them all


def _vouched_blobs(git: Git, vouched: list[Listed]) -> dict[str, bytes]:
    """The contents of the files git's index vouches for (unchanged in the work tree: the blob
    is the file), read from git's object store when they are many: one `git cat-file` reads a
    thousand blobs from the pack for what opening a thousand small files costs with every file
    in the page cache, and for a fraction of it without (a large work tree is rarely all cached).
    The content is also the blob its cache key names, even if the file changes meanwhile.
    A blob the object store lacks is read from the file ({} for the caller to do so)."""
    if len(vouched) < GIT_READ_FROM:
        return {}
    try:
        return dict(git.read_blobs(dict.fromkeys(item.sha for item in vouched)))
    except errors.GitError:
        return {}


def _from_entries(git: Git, entries: list[Entry]) -> Source:
    listed = [Listed(e.path, e.sha, e.mode) for e in entries if not e.path.endswith("/.gitkeep")]

    def reader(items: list[Listed]) -> Iterator[tuple[Listed, bytes]]:
        by_sha: dict[str, list[Listed]] = {}
        for item in items:
            by_sha.setdefault(item.sha, []).append(item)
        for sha, data in git.read_blobs(by_sha):
            for item in by_sha[sha]:
                yield item, data

    return Source(listed, reader)


def entries(git: Git, listed: list[Entry]) -> Source:
    """Given blobs of the object store (the files a commit added, say)."""
    return _from_entries(git, listed)


def staged(git: Git) -> Source:
    """The documents as they would be committed (git's index)."""
    return _from_entries(git, git.ls_files(*DOCUMENT_ROOTS))


def commit(git: Git, sha: str) -> Source:
    return _from_entries(git, git.ls_tree(sha, *DOCUMENT_ROOTS))
