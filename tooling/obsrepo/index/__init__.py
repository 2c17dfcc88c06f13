"""The DuckDB index: the only user of DuckDB. Built from git objects, published atomically."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import IndexFault
from ..gitstore import Git
from .paths import index_path

if TYPE_CHECKING:
    from .reader import open_reader
    from .writer import IndexFiles

__all__ = ["IndexFiles", "build_index", "index_path", "open_reader", "reader_at_least"]


def __getattr__(name: str) -> Any:
    """The reader and the writer on first use: `check` asks only where the index lives
    (`index.paths`) and must not pay for DuckDB's side of the package (the gate stays light)."""
    if name == "open_reader":
        from .reader import open_reader

        return open_reader
    if name == "IndexFiles":
        from .writer import IndexFiles

        return IndexFiles
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_index(git: Git, files: IndexFiles, target: str, **options: Any) -> Any:
    """See `build.build`; imported on demand (it loads the document rules and pydantic)."""
    from .build import build as _build

    return _build(git, files, target, **options)


def reader_at_least(git: Git, files: IndexFiles, target: str | None, auto_update: bool = True,
                    progress: Callable[[int, int], None] | None = None, embedder: Callable[[], Any] | None = None,
                    **settings: Any) -> Any:
    """A read-only connection to an index that is trustworthy and, when `target` is given,
    reflects it. A missing, damaged or outdated index is rebuilt or updated from git first
    (with the vectors of `embedder`, see vectors.py). `settings` are passed to `open_reader`
    (memory_limit)."""
    from .reader import open_reader

    try:
        con = open_reader(files.path, **settings)
    except IndexFault:
        if not auto_update:
            raise
        build_index(git, files, target or git.resolve("HEAD"), progress=progress, embedder=embedder)
        return open_reader(files.path, **settings)
    if target is None or not auto_update:
        return con
    indexed = con.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()[0]
    if indexed == target:
        return con
    con.close()
    build_index(git, files, target, progress=progress, embedder=embedder)
    return open_reader(files.path, **settings)
