"""The index file: where it lives, how a writer publishes a new generation, how readers open it.

DuckDB lets one process write or many read a file, never both. So the writer never writes
the published file: it builds a private copy (`<index>.tmp-<pid>`), checkpoints and closes
it, then renames it over the published one. A reader holds the generation it opened until it
closes it; new readers get the new one; `kill -9` at any moment leaves the published file
untouched. Writers are serialised by an advisory lock on `<index>.lock`.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import IndexFault
from .schema import FORMAT_VERSION

if TYPE_CHECKING:
    from concurrent.futures import Future

DEFAULT_INDEX = os.path.join(".obsrepo", "index.duckdb")


def index_path(root: str, given: str | None) -> str:
    chosen = given or os.environ.get("OBSREPO_INDEX") or os.path.join(root, DEFAULT_INDEX)
    return os.path.abspath(chosen)


def load_fts(con: Any) -> None:
    """The fts extension from the `duckdb-extension-fts` package (offline), else DuckDB's own."""
    try:  # one process's connections to one file share a database: it may be loaded already
        if con.execute("SELECT count(*) FROM duckdb_extensions() WHERE extension_name = 'fts' AND loaded").fetchone()[0]:
            return
    except Exception:  # noqa: BLE001 - then try to load it
        pass
    try:
        import duckdb
        import duckdb_extension_fts

        folder = Path(duckdb_extension_fts.__file__).parent / "extensions" / f"v{duckdb.__version__}"
        candidates = sorted(folder.glob("fts.duckdb_extension"))
        if candidates:
            con.execute(f"LOAD '{candidates[0].as_posix()}'")
            return
    except ImportError:
        pass
    try:
        con.execute("LOAD fts")
    except Exception as exc:  # noqa: BLE001 - any DuckDB failure means the same thing here
        raise IndexFault(
            "DuckDB's fts extension is not available: install the duckdb-extension-fts package "
            "whose version matches duckdb", detail=str(exc)
        ) from None


class Attached:
    """A read-write connection to one database file, attached to the process's writing engine:
    an in-memory DuckDB with the fts extension loaded once. Loading fts costs ~45 ms and a new
    database ~10 ms each time; attaching a file to the engine ~4 ms, so a long-running writer
    (the watcher, the MCP server) pays them once. `close()` checkpoints nothing by itself: it
    detaches the file, which closes it."""

    _engine: Any = None
    _lock = threading.Lock()
    _names = itertools.count()

    def __init__(self, path: str, read_only: bool = False) -> None:
        import duckdb

        without_pandas()
        with Attached._lock:
            if Attached._engine is None:
                engine = duckdb.connect(":memory:")
                load_fts(engine)
                Attached._engine = engine
            self._con = Attached._engine.cursor()
        self.alias = f"obsrepo_work_{next(Attached._names)}"
        quoted = path.replace("'", "''")
        try:
            self._con.execute(f"ATTACH '{quoted}' AS {self.alias}{' (READ_ONLY)' if read_only else ''}")
            self._con.execute(f"USE {self.alias}")
        except BaseException:
            self._con.close()
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def sibling(self) -> Any:
        """A second connection to the same attached file (its own temporary tables), for work
        that runs beside this connection's on another thread; close it before this one."""
        with Attached._lock:
            con = Attached._engine.cursor()
        con.execute(f"USE {self.alias}")
        return con

    def close(self) -> None:
        try:
            self._con.execute("USE memory")
            self._con.execute(f"DETACH {self.alias}")
        finally:
            self._con.close()


def open_writer(path: str) -> Attached:
    """A read-write connection to `path` (a private copy, or a new file)."""
    return Attached(path)


def damage_errors() -> tuple[type[BaseException], ...]:
    """What DuckDB raises when a file's blocks or catalog are damaged."""
    import duckdb

    return (duckdb.IOException, duckdb.CatalogException, duckdb.InternalException,
            duckdb.SerializationException, duckdb.FatalException)


def private_folder(folder: str) -> None:
    """Create `folder`; a `.obsrepo` folder gets a .gitignore, for nothing in it belongs in git."""
    os.makedirs(folder, exist_ok=True)
    ignore = os.path.join(folder, ".gitignore")
    if os.path.basename(folder) == ".obsrepo" and not os.path.exists(ignore):
        with open(ignore, "w", encoding="utf-8") as handle:
            handle.write("# written by obsrepo: the index is derived from git and never committed\n*\n")


def unwritable(path: str, exc: OSError) -> IndexFault:
    """INDEX_ERROR for an index file that cannot be created or replaced where it was asked for."""
    reason = exc.strerror or str(exc)
    where = f" ({exc.filename})" if exc.filename and exc.filename != path else ""
    return IndexFault(f"the index cannot be created at {path}: {reason}{where}; choose another place with "
                      "--index PATH or OBSREPO_INDEX", path=path)


def overlay_path(path: str) -> str:
    """The watcher's overlay of uncommitted documents (a small DuckDB file of its own)."""
    return path + ".overlay"


def status_path(path: str) -> str:
    """A sidecar JSON: when the index was last updated and how long it took."""
    return path + ".status.json"


def watch_lock_path(path: str) -> str:
    return path + ".watch"


def watcher_pid(path: str) -> int | None:
    """The pid of the `obsrepo watch` that holds the index's watch lock, or None when no watcher
    is running (a lock left by a killed watcher is released by the kernel)."""
    import fcntl

    try:
        handle = open(watch_lock_path(path))  # noqa: SIM115 - closed below
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            text = handle.read().strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def write_json(path: str, value: dict[str, Any]) -> None:
    """Replace a small JSON file atomically (a reader sees the old or the new one)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".status-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(value, handle, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        pass  # the status is informative only


def read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


class WatchLock:
    """The watch lock of an index, held: an exclusive `flock` on `<index>.watch`, which holds
    the watcher's pid. `held` takes it again when the file was deleted or replaced (the index's
    folder removed by hand), and fails when another watcher took it meanwhile."""

    def __init__(self, index: str) -> None:
        self.index = index
        self.handle = self._take()

    def _take(self) -> Any:
        import fcntl

        path = watch_lock_path(self.index)
        try:
            handle = open(path, "a+")  # noqa: SIM115 - kept open while the lock is held
        except OSError as exc:
            raise unwritable(self.index, exc) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise IndexFault(f"another `obsrepo watch` (pid {holder}) already watches the index at {self.index}",
                             path=self.index, pid=int(holder) if holder.isdigit() else None) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        return handle

    def held(self) -> bool:
        """Whether the lock file is still the one locked; when it is gone or another file,
        it is taken again (True), unless another watcher holds the new one (IndexFault).
        False: the lock had to be taken again, so anything kept beside it may be gone too."""
        if self._ours():
            return True
        try:
            private_folder(os.path.dirname(self.index))
        except OSError as exc:
            raise unwritable(self.index, exc) from None
        handle = self._take()
        self.handle.close()
        self.handle = handle
        return False

    def _ours(self) -> bool:
        """Whether the lock file at its path is the file this lock holds."""
        try:
            return os.path.samestat(os.fstat(self.handle.fileno()), os.stat(watch_lock_path(self.index)))
        except (OSError, ValueError):
            return False

    def release(self) -> None:
        import fcntl

        with contextlib.suppress(OSError, ValueError):
            if self._ours():
                self.handle.seek(0)
                self.handle.truncate()
                self.handle.flush()
            fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


class IndexFiles:
    def __init__(self, path: str) -> None:
        self.path = path
        self.lock_path = path + ".lock"

    def check_place(self) -> None:
        """INDEX_ERROR when something that is not a regular file is where the index goes."""
        if os.path.exists(self.path) and not os.path.isfile(self.path):  # a folder, a device, a pipe…
            raise IndexFault(f"the index cannot be created at {self.path}: something that is not a regular "
                             "file is there; choose another place with --index PATH or OBSREPO_INDEX", path=self.path)

    @contextlib.contextmanager
    def watch_lock(self) -> Iterator[WatchLock]:
        """One watcher per index: a second one fails at once with INDEX_ERROR naming the holder,
        and so does a watcher of an index that could never be written there."""
        self.check_place()
        try:
            private_folder(os.path.dirname(self.path))
        except OSError as exc:
            raise unwritable(self.path, exc) from None
        lock = WatchLock(self.path)
        try:
            yield lock
        finally:
            for leftover in (overlay_path(self.path), _seal_path(overlay_path(self.path))):
                with contextlib.suppress(OSError):
                    os.remove(leftover)
            lock.release()

    @contextlib.contextmanager
    def writer_lock(self) -> Iterator[None]:
        import fcntl

        self.check_place()
        try:
            private_folder(os.path.dirname(self.path))
            handle = open(self.lock_path, "a+")
        except OSError as exc:
            raise unwritable(self.path, exc) from None
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                self._sweep()
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

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


def _identity(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _seal_path(path: str) -> str:
    return path + ".seal"


def _read_seal(path: str) -> dict[str, list[int]]:
    try:
        with open(_seal_path(path), encoding="utf-8") as handle:
            seal = json.load(handle)
        return {str(k): list(v) for k, v in seal.get("generations", {}).items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def sealed(path: str) -> bool:
    """Whether the file at `path` is, byte for byte, a generation a writer published: its inode,
    size and modification time are recorded in the seal. A file truncated, overwritten or edited
    in place afterwards fails this test and is rebuilt rather than trusted."""
    identity = _identity(path)
    if identity is None:
        return False
    return _read_seal(path).get(str(identity[0])) == identity


def publish(work: str, path: str) -> None:
    """Seal the new generation (keeping the current one's entry for readers mid-swap), then
    rename it over the published file."""
    with open(work, "rb+") as handle:
        os.fsync(handle.fileno())
    generations = {}
    current = _identity(path)
    if current is not None and sealed(path):
        generations[str(current[0])] = current
    new = _identity(work)
    assert new is not None
    generations[str(new[0])] = new
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".seal-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"generations": generations}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, _seal_path(path))
    old = _keep_old(path)
    os.replace(work, path)
    directory = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    if old is not None:
        _free_later(old)


_old_names = itertools.count()
_freeing: list[threading.Thread] = []


def _keep_old(path: str) -> str | None:
    """A second name for the generation about to be replaced: the rename then frees nothing, and
    the old file's blocks are freed off the writer's path (`_free_later`); on ext4 freeing a
    65 MB index takes ~13 ms. None when there is no old file or no hard links here."""
    old = f"{path}.old-{os.getpid()}-{next(_old_names)}"
    try:
        os.link(path, old)
    except OSError:  # nothing published yet, or a file system without hard links
        return None
    return old


def _free_later(old: str) -> None:
    """Remove `old` on a thread. Readers holding the old generation open keep it readable; what
    a process leaves undone the next writer's sweep removes."""
    def free() -> None:
        with contextlib.suppress(OSError):
            os.remove(old)

    _freeing[:] = [thread for thread in _freeing if thread.is_alive()]
    thread = threading.Thread(target=free, name="obsrepo-free")
    thread.start()
    _freeing.append(thread)


def wait_for_freeing() -> None:
    """Wait until the old generations this process replaced are removed (before a quick exit)."""
    for thread in list(_freeing):
        thread.join()


def without_pandas() -> None:
    """DuckDB's Python client tries `import pandas` for every parameter it converts; when pandas
    is not installed each failed attempt walks sys.path again (~0.1 ms, dozens per query).
    Recording the absence once makes those attempts fail at once; nothing changes when pandas
    is installed."""
    import importlib.util
    import sys

    if "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None:
        sys.modules["pandas"] = None  # type: ignore[assignment]


def open_internal(path: str) -> Any:
    """A read-only connection for obsrepo's own statements (which commit, intact, status): the
    published file attached to the writing engine, with the checks of `open_reader`."""
    return open_reader(path, sandbox=False, fts=False, engine=True)


def open_reader(path: str, *, sandbox: bool = True, fts: bool = True, memory_limit: str | None = None,
                overlay: bool = False, engine: bool = False) -> Any:
    """A read-only connection to a published index, checked before it is trusted. With
    `memory_limit` (DuckDB's syntax, e.g. "1GB") the connection may use no more than that.
    With `overlay`, a running watcher's overlay of uncommitted documents is attached as the
    database `watch_overlay` when it was made for the indexed commit (see `attach_overlay`)."""
    import duckdb

    without_pandas()

    if not os.path.exists(path):
        raise IndexFault(f"no index at {path}", path=path)
    IndexFiles(path).check_place()  # a folder, a device: said as such, not as a file changed in place
    for _attempt in range(3):
        before = _identity(path)
        if not sealed(path):
            raise IndexFault(f"the index at {path} is not a generation obsrepo published (changed in place?)", path=path)
        try:
            con = Attached(path, read_only=True) if engine else duckdb.connect(path, read_only=True)
        except Exception as exc:  # noqa: BLE001
            raise IndexFault(f"the index at {path} cannot be opened: {exc}", path=path) from None
        if _identity(path) == before:
            break
        con.close()  # a writer published a new generation meanwhile: open that one
    else:
        raise IndexFault(f"the index at {path} keeps changing", path=path)
    try:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    except Exception as exc:  # noqa: BLE001
        con.close()
        raise IndexFault(f"the index at {path} is damaged: {exc}", path=path) from None
    if meta.get("format_version") != FORMAT_VERSION or len(meta.get("commit", "")) != 40:
        con.close()
        raise IndexFault(f"the index at {path} has format {meta.get('format_version')!r}, expected {FORMAT_VERSION}", path=path)
    if fts:
        load_fts(con)
    if overlay:
        attach_overlay(con, path, meta["commit"])
    if memory_limit is not None:
        con.execute(f"SET memory_limit = '{memory_limit}'")  # checked by the caller: digits and a unit
    if sandbox:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    return con


OVERLAY_DB = "watch_overlay"


def attach_overlay(con: Any, path: str, commit: str) -> bool:
    """Attach the overlay read-only when a watcher is running, the file is a sealed generation
    and it was made over `commit`; anything else leaves the committed answers alone."""
    where = overlay_path(path)
    if not os.path.exists(where) or watcher_pid(path) is None or not sealed(where):
        return False
    try:
        quoted = where.replace("'", "''")
        con.execute(f"ATTACH '{quoted}' AS {OVERLAY_DB} (READ_ONLY)")
    except Exception:  # noqa: BLE001 - replaced or damaged meanwhile: committed answers only
        return False
    try:
        base = con.execute(f"SELECT value FROM {OVERLAY_DB}.meta WHERE key = 'commit'").fetchone()
    except Exception:  # noqa: BLE001
        base = None
    if base is None or base[0] != commit:
        con.execute(f"DETACH {OVERLAY_DB}")
        return False
    return True
