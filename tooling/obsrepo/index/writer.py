"""The writer side: the files of one index (the published file, its writer lock, private
copies) and a writer's connection. Writers are serialised by an advisory lock on
`<index>.lock`; each builds a private copy and publishes it (see `generations`)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..errors import IndexFault
from ..processes import exclusive
from .engine import Attached
from .generations import seal_path
from .paths import claim, overlay_path, private_folder, unwritable
from .reader import open_internal
from .watch_lock import WatchLock

if TYPE_CHECKING:
    from concurrent.futures import Future


class IndexFiles:
    """The files of one index: the published file, the writer lock beside it, private copies."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock_path = path + ".lock"

    @contextlib.contextmanager
    def watch_lock(self) -> Iterator[WatchLock]:
        """One watcher per index: a second one fails at once with INDEX_ERROR naming the holder,
        and so does a watcher of an index that could never be written there."""
        claim(self.path)
        try:
            private_folder(os.path.dirname(self.path))
        except OSError as exc:
            raise unwritable(self.path, exc) from None
        lock = WatchLock(self.path)
        try:
            yield lock
        finally:
            for leftover in (overlay_path(self.path), seal_path(overlay_path(self.path))):
                with contextlib.suppress(OSError):
                    os.remove(leftover)
            lock.release()

    @contextlib.contextmanager
    def writer_lock(self) -> Iterator[None]:
        """The index's writer lock, held: a kernel lock on a descriptor no child inherits (it is
        opened close-on-exec, and worker pools start from a fork server, `processes.pool`),
        waited for within a bound that stderr names after 2 s (docs/design.md §8b)."""
        claim(self.path)
        try:
            private_folder(os.path.dirname(self.path))
            handle = open(self.lock_path, "a+")
        except OSError as exc:
            raise unwritable(self.path, exc) from None
        with handle, exclusive(handle, "the index writer lock", self.lock_path):
            self._sweep()
            yield

    def _sweep(self) -> None:
        """Private copies left by writers that were killed (we hold the lock: none is live), and
        old generations whose freeing a finished process did not see through."""
        for stale in glob.glob(glob.escape(self.path) + ".tmp-*") + glob.glob(glob.escape(self.path) + "*.old-*"):
            with contextlib.suppress(OSError):
                os.remove(stale)

    def current_commit_chain(self) -> list[str] | None:
        """The stored first-parent chain, or None when there is no trustworthy index."""
        try:
            con = open_internal(self.path)
        except IndexFault:
            return None
        try:
            return [row[0] for row in con.execute("SELECT sha FROM commits ORDER BY seq").fetchall()]
        except Exception:  # noqa: BLE001 - a damaged file: rebuild
            return None
        finally:
            con.close()

    def intact(self) -> bool:
        """Whether every row of every table of the published index reads back: DuckDB checks
        each block's checksum as it reads it, so a damaged block anywhere fails here."""
        try:
            con = open_internal(self.path)
        except IndexFault:
            return False
        try:
            tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() "
                                 "WHERE database_name = current_database() ORDER BY ALL").fetchall()
            for schema, table in tables:
                con.execute(f'SELECT count(*), max(hash(t)) FROM "{schema}"."{table}" AS t').fetchall()
        except Exception:  # noqa: BLE001 - any failure to read back means: do not trust it
            return False
        finally:
            con.close()
        return True

    def private_copy(self, copy: bool) -> str:
        work = f"{self.path}.tmp-{os.getpid()}"
        for leftover in (work, work + ".wal"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(leftover)
        if copy:
            shutil.copyfile(self.path, work)
        return work

    def early_copy(self) -> Future[str] | None:
        """Start the private copy of the published file on a thread, for a writer (holding the
        lock) that will most likely update it: copying releases the interpreter, so it runs while
        the writer imports DuckDB and reads the stored chain (~25 ms of an update at 100,000
        observations). None when there is no file; `discard` it when it was not used."""
        if not os.path.isfile(self.path):
            return None
        import concurrent.futures

        copier = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="obsrepo-copy")
        try:
            return copier.submit(self.private_copy, True)
        finally:
            copier.shutdown(wait=False)  # the thread ends with its one task

    @staticmethod
    def discard(work: str) -> None:
        for leftover in (work, work + ".wal"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(leftover)


def open_writer(path: str) -> Attached:
    """A read-write connection to `path` (a private copy, or a new file)."""
    return Attached(path)


