"""Published generations: a writer seals a finished private copy (its inode, size and
modification time recorded beside the index), renames it over the published file, and frees
the replaced generation off its path. A reader trusts only a sealed file.

DuckDB lets one process write or many read a file, never both. So the writer never writes
the published file: it builds a private copy (`<index>.tmp-<pid>`), checkpoints and closes
it, then renames it over the published one. A reader holds the generation it opened until it
closes it; new readers get the new one; `kill -9` at any moment leaves the published file
untouched."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import tempfile
import threading


def file_identity(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def seal_path(path: str) -> str:
    return path + ".seal"


def _read_seal(path: str) -> dict[str, list[int]]:
    try:
        with open(seal_path(path), encoding="utf-8") as handle:
            seal = json.load(handle)
        return {str(k): list(v) for k, v in seal.get("generations", {}).items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def sealed(path: str) -> bool:
    """Whether the file at `path` is, byte for byte, a generation a writer published: its inode,
    size and modification time are recorded in the seal. A file truncated, overwritten or edited
    in place afterwards fails this test and is rebuilt rather than trusted."""
    identity = file_identity(path)
    if identity is None:
        return False
    return _read_seal(path).get(str(identity[0])) == identity


def publish(work: str, path: str) -> None:
    """Seal the new generation (keeping the current one's entry for readers mid-swap), then
    rename it over the published file."""
    with open(work, "rb+") as handle:
        os.fsync(handle.fileno())
    generations = {}
    current = file_identity(path)
    if current is not None and sealed(path):
        generations[str(current[0])] = current
    new = file_identity(work)
    assert new is not None
    generations[str(new[0])] = new
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".seal-")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"generations": generations}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, seal_path(path))
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


