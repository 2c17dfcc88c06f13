"""The reader side: a read-only connection to a published index, checked before it is trusted
(sealed, the expected format, an indexed commit), sandboxed for user SQL, with a running
watcher's overlay attached when it matches."""

from __future__ import annotations

import os
import threading
from typing import Any

from ..errors import IndexFault
from .engine import Attached, load_fts, without_pandas
from .generations import file_identity, sealed
from .paths import check_place, overlay_path
from .schema import FORMAT_VERSION
from .watch_lock import watcher_pid


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
    with _OPENING:  # one thread at a time from connecting to sandboxing: see `_locked`
        return _open(path, sandbox, fts, memory_limit, overlay, engine)


_OPENING = threading.Lock()


def _open(path: str, sandbox: bool, fts: bool, memory_limit: str | None, overlay: bool, engine: bool) -> Any:
    import duckdb

    without_pandas()

    if not os.path.exists(path):
        raise IndexFault(f"no index at {path}", path=path)
    check_place(path)  # a folder, a device: said as such, not as a file changed in place
    for _attempt in range(3):
        before = file_identity(path)
        if not sealed(path):
            raise IndexFault(f"the index at {path} is not a generation obsrepo published (changed in place?)", path=path)
        con: Any
        try:
            con = Attached(path, read_only=True) if engine else duckdb.connect(path, read_only=True)
            if sandbox and not engine and _locked(con):
                con.close()
                con = _Private(path)
        except Exception as exc:  # noqa: BLE001
            raise IndexFault(f"the index at {path} cannot be opened: {exc}", path=path) from None
        if file_identity(path) == before:
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


def _locked(con: Any) -> bool:
    """Whether this connection's database is already sandboxed and locked: DuckDB gives one
    process one database per file, so a second reader of a file another sandboxed reader holds
    open (a library user's threads, a block kept open while another Session reads) joins a
    database whose configuration can no longer be set, nor its fts extension loaded."""
    return bool(con.execute("SELECT current_setting('lock_configuration')").fetchone()[0])


class _Private:
    """A database of this reader's own with the file attached read-only under the name a direct
    connection gives it, so that it can be sandboxed as any reader is (~10 ms more, only when
    another reader of the file is open in this process). Its cursors use the file too."""

    def __init__(self, path: str) -> None:
        import duckdb

        self._use = 'USE "{}"'.format(os.path.splitext(os.path.basename(path))[0].replace('"', '""'))
        self._con = duckdb.connect(":memory:")
        quoted = path.replace("'", "''")
        try:
            self._con.execute(f"ATTACH '{quoted}' AS {self._use[4:]} (READ_ONLY)")
            self._con.execute(self._use)
        except BaseException:
            self._con.close()
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def cursor(self) -> Any:
        con = self._con.cursor()
        con.execute(self._use)
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
