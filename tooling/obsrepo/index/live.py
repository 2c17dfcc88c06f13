"""One read-only connection kept open for a long-running reader (the MCP server), always fresh.

Opening the index costs more than most questions asked of it (checking the seal, loading the
fts extension), so a server keeps one connection per *generation* of the index and hands each
request a cursor of it. Before every request `lease` resolves HEAD (one `git rev-parse`) and
compares it with the commit the open generation reflects; when HEAD moved, or another process
published a new generation, the index is brought to HEAD in this process (`build_index`: the
usual plan and update, published atomically) and the new generation is opened. No request is
answered from a commit older than HEAD at the moment it started. A running watcher's overlay of
uncommitted drafts (docs/design.md §13) is attached to each generation, and a new overlay file
opens a new generation too; each read scope decides whether it shows the drafts.

Requests may run on several threads at once: one thread at a time refreshes (the others wait
for it, so none reads the old commit). DuckDB shares one database per file path within a
process, and closing a connection closes its cursors: so a refresh first waits for the
requests still reading the old generation, closes it, and only then lets the writer (which
opens the path for its own checks) and the new generation open the path.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..errors import IndexFault
from ..gitstore import Git
from . import build_index, reader_at_least
from .freshness import wait_for_watcher
from .paths import overlay_path
from .reader import open_reader
from .watch_lock import watcher_pid
from .writer import IndexFiles

IDLE_SCOPES = 16  # read scopes a generation keeps between requests, the least recently given back closed first


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class _HeadCache:
    """HEAD's commit, resolved again only when a file git moves HEAD with changed: HEAD itself,
    the branch it names (loose) and `packed-refs`. Git replaces each by a rename, so a new inode,
    size or time means a possible move; the stamp is taken before resolving, so a move between
    the two only costs one more resolve. Repositories with the reftable format (refs in other
    files) and anything unreadable are resolved every time."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.stamp: tuple | None = None
        self.head = ""

    def resolve(self) -> str:
        stamp = self._stamp()
        if stamp is not None and stamp == self.stamp:
            return self.head
        head = self.git.resolve("HEAD")
        self.stamp, self.head = stamp, head
        return head

    def _stamp(self) -> tuple | None:
        try:
            git_dir, common = self.git.dirs()
            if os.path.exists(os.path.join(common, "reftable")):
                return None
            with open(os.path.join(git_dir, "HEAD"), "rb") as handle:
                text = handle.read(4096).decode("utf-8", "replace").strip()
            files = [os.path.join(git_dir, "HEAD"), os.path.join(common, "packed-refs")]
            if text.startswith("ref: refs/"):
                files.append(os.path.join(common, *text[5:].split("/")))
            return tuple((text, *(_identity(f) for f in files)))
        except Exception:  # noqa: BLE001 - any doubt: resolve with git
            return None


class _Generation:
    """An open connection to one published index file, and how many requests use it."""

    def __init__(self, con: Any, commit: str, identity: tuple[int, int, int] | None,
                 drafts: tuple[int, int, int] | None) -> None:
        self.con = con
        self.commit = commit
        self.identity = identity
        self.drafts = drafts  # the watcher's overlay file as it was when this generation opened
        self.users = 0
        self.memo: dict[tuple, Any] = {}  # answers that depend only on this generation (read/scope.py)
        # read scopes between requests, by what their views depend on (commit, binding, ceiling, …)
        self.idle: OrderedDict[tuple, list[Any]] = OrderedDict()

    def cursor(self) -> Any:
        """A cursor of the generation's own connection (a kept read scope's: it outlives a lease)."""
        return self.con.cursor()

    def close_idle(self) -> None:
        while self.idle:
            for scope in self.idle.popitem(last=False)[1]:
                scope.close()


class Lease:
    """A cursor of the current generation for one request; `close` gives it back. It stands in
    for a connection (`cursor`, `execute`, … are the cursor's)."""

    def __init__(self, owner: LiveIndex, generation: _Generation) -> None:
        self._owner = owner
        self._generation: _Generation | None = generation
        self._cursor: Any = None  # opened when first used: a read over a kept scope needs none
        self.commit = generation.commit
        self.memo = generation.memo

    def __getattr__(self, name: str) -> Any:
        if self._cursor is None:
            if self._generation is None:
                raise AttributeError(f"{name}: the lease was given back")
            self._cursor = self._generation.con.cursor()
        return getattr(self._cursor, name)

    def scope(self, key: tuple, build: Callable[[Any], Any]) -> Any:
        """A read scope of `key` kept from an earlier request of this generation, else
        `build(source)` of a source whose cursors outlive the lease: building one (its views,
        the stewardship relation) costs more than a text question asked of it. `key` must name
        everything the scope's views depend on: the commit, the binding, the ceiling, the
        retention and the drafts; a scope is never handed to two requests at once."""
        with self._owner._state:
            generation = self._generation
            assert generation is not None
            kept = generation.idle.get(key)
            if kept:
                return kept.pop()
        return build(generation)

    def keep(self, key: tuple, scope: Any) -> None:
        """Give back a scope `scope(key, …)` handed out, unchanged in what its views show."""
        with self._owner._state:
            generation = self._generation
            assert generation is not None
            generation.idle.setdefault(key, []).append(scope)
            generation.idle.move_to_end(key)
            evicted = []
            while sum(len(kept) for kept in generation.idle.values()) > IDLE_SCOPES:
                oldest = next(iter(generation.idle.values()))
                evicted.append(oldest.pop(0))
                if not oldest:
                    generation.idle.popitem(last=False)
        for old in evicted:
            old.close()

    def close(self) -> None:
        generation = self._generation
        if generation is None:
            return
        try:
            if self._cursor is not None:
                self._cursor.close()
        finally:
            self._cursor, self._generation = None, None
            self._owner._release(generation)


class LiveIndex:
    def __init__(self, git: Git, files: IndexFiles, progress: Callable[[int, int], None] | None = None,
                 embedder: Callable[[], Any] | None = None) -> None:
        """`embedder`: the configured embedder's source (vectors.py): every update embeds what
        the commits it brings in added, as `obsrepo index` would."""
        self.git = git
        self.files = files
        self.progress = progress
        self.embedder = embedder
        self._refresh = threading.Lock()  # one refresher at a time; requests wait for it
        self._state = threading.Condition()  # the current generation and its use count
        self._current: _Generation | None = None
        self._heads = _HeadCache(git)

    def lease(self) -> Lease:
        """A cursor on an index that reflects HEAD (updated and reopened first when needed)."""
        with self._refresh:
            head = self._heads.resolve()  # GIT_ERROR when the repository has no commits yet
            current = self._current
            if (current is None or current.commit != head or _identity(self.files.path) != current.identity
                    or _identity(overlay_path(self.files.path)) != current.drafts):
                self._close_current()
                self._open(lambda: self._fresh(head))
            with self._state:
                generation = self._current
                assert generation is not None
                generation.users += 1
        try:
            return Lease(self, generation)
        except BaseException:
            self._release(generation)
            raise

    def _fresh(self, head: str) -> Any:
        """The index brought to `head` (nothing to do when it is there already), then opened
        once; anything untrustworthy on the way is `reader_at_least`'s to repair."""
        try:
            if watcher_pid(self.files.path) is not None:  # read your own commit (§8a): the watcher's update first
                wait_for_watcher(self.files.path, head)
            build_index(self.git, self.files, head, progress=self.progress, embedder=self.embedder)
            return open_reader(self.files.path, overlay=True)
        except IndexFault:
            return reader_at_least(self.git, self.files, head, progress=self.progress, embedder=self.embedder, overlay=True)

    def rebuild(self) -> None:
        """Rebuild the index from git (it was found damaged) and reopen it."""
        with self._refresh:
            self._close_current()
            head = self.git.resolve("HEAD")
            build_index(self.git, self.files, head, full=True, progress=self.progress, embedder=self.embedder)

    def _close_current(self) -> None:
        """Close the open generation once the requests using it are done. DuckDB shares one
        database per file path within a process, so nothing else may open the path (the
        writer's own checks, the next generation) while it is open."""
        with self._state:
            current = self._current
            if current is None:
                return
            while current.users:
                self._state.wait()
            current.close_idle()
            current.con.close()
            self._current = None

    def _open(self, connect: Callable[[], Any]) -> None:
        drafts = _identity(overlay_path(self.files.path))  # before attaching: a newer one reopens again
        con = connect()
        try:
            commit = con.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()[0]
            identity = _identity(self.files.path)
        except BaseException:
            con.close()
            raise
        with self._state:
            self._current = _Generation(con, commit, identity, drafts)

    def _release(self, generation: _Generation) -> None:
        with self._state:
            generation.users -= 1
            self._state.notify_all()

    def close(self) -> None:
        with self._refresh:
            self._close_current()
