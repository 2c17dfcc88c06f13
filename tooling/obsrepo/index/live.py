"""One read-only connection kept open for a long-running reader (the MCP server), always fresh.

Opening the index costs more than most questions asked of it (checking the seal, loading the
fts extension), so a server keeps one connection per *generation* of the index and hands each
request a cursor of it. Before every request `lease` resolves HEAD (one `git rev-parse`) and
compares it with the commit the open generation reflects; when HEAD moved, or another process
published a new generation, the index is brought to HEAD in this process (`build_index`: the
usual plan and update, published atomically) and the new generation is opened. No request is
answered from a commit older than HEAD at the moment it started.

Requests may run on several threads at once: one thread at a time refreshes (the others wait
for it, so none reads the old commit), and a retired generation is closed only when the last
request using it is done (closing a DuckDB connection closes its cursors).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from ..gitstore import Git
from . import reader_at_least
from .store import IndexFiles


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class _Generation:
    """An open connection to one published index file, and how many requests use it."""

    def __init__(self, con: Any, commit: str, identity: tuple[int, int, int] | None) -> None:
        self.con = con
        self.commit = commit
        self.identity = identity
        self.users = 0
        self.retired = False


class Lease:
    """A cursor of the current generation for one request; `close` gives it back. It stands in
    for a connection (`cursor`, `execute`, … are the cursor's)."""

    def __init__(self, owner: LiveIndex, generation: _Generation) -> None:
        self._owner = owner
        self._generation = generation
        self._cursor = generation.con.cursor()
        self.commit = generation.commit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    def close(self) -> None:
        if self._cursor is None:
            return
        try:
            self._cursor.close()
        finally:
            self._cursor = None
            self._owner._release(self._generation)


class LiveIndex:
    def __init__(self, git: Git, files: IndexFiles, progress: Callable[[int, int], None] | None = None) -> None:
        self.git = git
        self.files = files
        self.progress = progress
        self._refresh = threading.Lock()  # one refresher at a time
        self._state = threading.Lock()  # the current generation and the use counts
        self._current: _Generation | None = None

    def lease(self) -> Lease:
        """A cursor on an index that reflects HEAD (updated and reopened first when needed)."""
        with self._refresh:
            head = self.git.resolve("HEAD")  # GIT_ERROR when the repository has no commits yet
            current = self._current
            if current is None or current.commit != head or _identity(self.files.path) != current.identity:
                self._open(head)
            with self._state:
                generation = self._current
                assert generation is not None
                generation.users += 1
        try:
            return Lease(self, generation)
        except BaseException:
            self._release(generation)
            raise

    def _open(self, head: str) -> None:
        con = reader_at_least(self.git, self.files, head, progress=self.progress)
        try:
            commit = con.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()[0]
            identity = _identity(self.files.path)
        except BaseException:
            con.close()
            raise
        with self._state:
            old, self._current = self._current, _Generation(con, commit, identity)
            if old is not None:
                old.retired = True
                if old.users == 0:
                    old.con.close()

    def _release(self, generation: _Generation) -> None:
        with self._state:
            generation.users -= 1
            if generation.retired and generation.users == 0:
                generation.con.close()

    def close(self) -> None:
        with self._refresh, self._state:
            if self._current is not None:
                self._current.retired = True
                if self._current.users == 0:
                    self._current.con.close()
                self._current = None
