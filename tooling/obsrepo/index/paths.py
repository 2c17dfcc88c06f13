"""Where an index lives and the small files beside it: the overlay, the status and watch-lock
sidecars, the JSON they hold, and the folder they go in. Nothing here opens DuckDB."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from ..errors import IndexFault

DEFAULT_INDEX = os.path.join(".obsrepo", "index.duckdb")


def index_path(root: str, given: str | None) -> str:
    chosen = given or os.environ.get("OBSREPO_INDEX") or os.path.join(root, DEFAULT_INDEX)
    return os.path.abspath(chosen)


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


def check_place(path: str) -> None:
    """INDEX_ERROR when something that is not a regular file is where the index goes."""
    if os.path.exists(path) and not os.path.isfile(path):  # a folder, a device, a pipe…
        raise IndexFault(f"the index cannot be created at {path}: something that is not a regular "
                         "file is there; choose another place with --index PATH or OBSREPO_INDEX", path=path)


def overlay_path(path: str) -> str:
    """The watcher's overlay of uncommitted documents (a small DuckDB file of its own)."""
    return path + ".overlay"


def status_path(path: str) -> str:
    """A sidecar JSON: when the index was last updated and how long it took."""
    return path + ".status.json"


def watch_lock_path(path: str) -> str:
    return path + ".watch"


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
