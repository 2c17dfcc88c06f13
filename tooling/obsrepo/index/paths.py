"""Where an index lives and the small files beside it: the overlay, the status and watch-lock
sidecars, the JSON they hold, and the folder they go in. Nothing here opens DuckDB."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from typing import Any

from ..errors import IndexFault
from .generations import seal_path, sealed

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


def claim(path: str) -> None:
    """INDEX_ERROR naming `path` unless an index may be written there (docs/design.md §8b):
    nothing is there and git does not track the path (it is created), or what is there is an
    index obsrepo wrote (damaged or of an older format: rebuilt). Anything else — a text file,
    someone's own DuckDB database, a document, a folder, a symlink — is never replaced, and no
    side file (`.lock`, `.seal`, `.status.json`) is made beside it: call this before any."""
    try:
        st = os.lstat(path)
    except OSError:  # nothing there (or no way there: creating it says why)
        if _tracked(path):
            raise _refused(path, "git tracks this path") from None
        return
    if stat.S_ISLNK(st.st_mode):
        raise _refused(path, "a symlink is there")
    if not stat.S_ISREG(st.st_mode):  # a folder, a device, a pipe…
        raise _refused(path, "something that is not a regular file is there")
    if not obsrepo_wrote(path):
        raise _refused(path, "a file obsrepo did not write is there (not an index it published)")


def obsrepo_wrote(path: str) -> bool:
    """Whether the regular file at `path` is an index obsrepo wrote: a sealed generation; or
    one changed in place since (damaged), which its seal beside it still names ours; or the
    default index in obsrepo's own folder; or a DuckDB file whose `meta` table obsrepo fills
    (an index of an older format, or one whose seal was lost)."""
    if sealed(path) or os.path.isfile(seal_path(path)):
        return True
    if path.endswith(os.sep + DEFAULT_INDEX):
        return True
    return _duckdb_of_ours(path)


def _duckdb_of_ours(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            header = handle.read(12)
    except OSError:
        return False
    if header[8:12] != b"DUCK":
        return False
    try:
        import duckdb

        con = duckdb.connect(path, read_only=True)
    except Exception:  # noqa: BLE001 - held by its owner's writer, another version, damaged: not known ours
        return False
    try:
        keys = {row[0] for row in con.execute("SELECT key FROM meta").fetchall()}
    except Exception:  # noqa: BLE001 - no such table: someone else's database
        return False
    finally:
        con.close()
    return {"commit", "format_version"} <= keys


def _tracked(path: str) -> bool:
    """Whether git tracks `path` (a file deleted from the work tree, or its folder), in the
    repository around the nearest folder of it that exists; False outside any repository."""
    from ..gitstore import Git

    folder = os.path.dirname(path)
    while folder and not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    git = Git.discover(folder or ".")
    if git is None:
        return False
    rel = os.path.relpath(os.path.realpath(path), git.root)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return False
    return bool(git.run("ls-files", "-z", "--", f":(literal){rel}", check=False).strip(b"\0"))


def _refused(path: str, why: str) -> IndexFault:
    return IndexFault(f"the index cannot be created at {path}: {why}; obsrepo writes an index only where "
                      "nothing is or where it wrote one; choose another place with --index PATH or OBSREPO_INDEX",
                      path=path)


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
