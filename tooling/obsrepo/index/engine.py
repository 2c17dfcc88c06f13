"""DuckDB in this process: the fts extension, the writing engine that files are attached to
(`Attached`), and what DuckDB raises for a damaged file. The only module that connects a
writer; readers connect through `reader`."""

from __future__ import annotations

import itertools
import os
import re
import threading
from pathlib import Path
from typing import Any

from ..errors import IndexFault
from ..processes import refuse_pandas, without_pandas  # noqa: F401 - the engine's callers ask it here


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


WRITER_MEMORY = "1GB"  # the writing engine's working memory; a bulk load or sort beyond it spills to disk
_MEMORY = re.compile(r"\s*\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*", re.IGNORECASE)


def writer_memory() -> str:
    """The writing engine's memory limit: OBSREPO_INDEX_MEMORY (e.g. `512MB`, for a small CI
    runner), else WRITER_MEMORY. What the index holds beyond it is spilled, never refused."""
    chosen = os.environ.get("OBSREPO_INDEX_MEMORY") or WRITER_MEMORY
    if not _MEMORY.fullmatch(chosen):
        raise IndexFault(f"OBSREPO_INDEX_MEMORY is {chosen!r}: give an amount with its unit, like 512MB or 2GB")
    return chosen.strip()


def _spill_folder() -> str:
    """Where the writing engine spills: a folder of this process's own, removed when it exits
    (DuckDB's default, `.tmp` in the working directory, would be the user's work tree)."""
    import atexit
    import shutil
    import tempfile

    folder = os.path.join(tempfile.gettempdir(), f"obsrepo-spill-{os.getpid()}")
    atexit.register(shutil.rmtree, folder, True)
    return folder


class Attached:
    """A read-write connection to one database file, attached to the process's writing engine:
    an in-memory DuckDB with the fts extension loaded once, its memory bounded (WRITER_MEMORY). Loading fts costs ~45 ms and a new
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
                engine = duckdb.connect(":memory:", config={"memory_limit": writer_memory(),
                                                            "temp_directory": _spill_folder()})
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


def query_mistake(exc: BaseException, con: Any) -> bool:
    """Whether a damage error is a query's own mistake: a CatalogException (a name it got wrong)
    while every table and view of the index's schema is there. A damaged file it is not, and
    rebuilding would only hide it."""
    import re

    import duckdb

    from .schema import TABLES, VIEWS

    if not isinstance(exc, duckdb.CatalogException):
        return False
    expected = set(re.findall(r"CREATE (?:OR REPLACE )?(?:TABLE|VIEW) (\w+)", TABLES + VIEWS))
    try:
        present = {row[0] for row in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "UNION ALL SELECT view_name FROM duckdb_views() WHERE database_name = current_database()").fetchall()}
    except duckdb.Error:
        return False
    return expected <= present


def damage_errors() -> tuple[type[BaseException], ...]:
    """What DuckDB raises when a file's blocks or catalog are damaged."""
    import duckdb

    return (duckdb.IOException, duckdb.CatalogException, duckdb.InternalException,
            duckdb.SerializationException, duckdb.FatalException)


