"""Files are whole or absent (docs/design.md §8a): everything obsrepo writes into the work tree
is written to a temporary file in the target folder, flushed and fsynced, then renamed into
place, so a reader (`check`, `git add`, a watcher) sees the old file or the new one, never a
part of one. A new file never replaces an existing one (a hard link, which fails when the name
is taken); a replaced file (a comprehension document, an export) changes only by the rename.

Any failure (a full disk, a file-size limit, a file where a folder should be, permissions, a
read-only file system) removes the temporary file and is a `WriteFault` naming the path and
the reason. This module imports nothing of ours but the errors.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator

from .errors import WriteFault


def write_new(path: str, data: bytes) -> bool:
    """Write `data` as the new file `path`; False (nothing written) when a file is already
    there, also when another writer put it there a moment ago."""
    with _staged(path, folder=False) as temporary:
        _write_all(temporary, data)
        _sync(temporary)
        return _link_new(temporary, path)


def write_replacing(path: str, data: bytes) -> None:
    """Write `data` in place of the file `path` (or as a new file), keeping the old file's
    permissions: the old bytes stay whole until the rename."""
    with staged(path) as temporary:
        _write_all(temporary, data)
        with contextlib.suppress(OSError):
            os.chmod(temporary, stat.S_IMODE(os.stat(path).st_mode))


def append_to(path: str, data: bytes) -> None:
    """Append `data` to the existing regular file `path`, in place: the file keeps its inode,
    owner, permissions and links, and its old bytes are never rewritten. A symlink, or anything
    but a regular file, is a `WriteFault` (never followed, never replaced)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WriteFault(f"cannot write {path}: it is a symlink", path=path, reason="a symlink") from None
        raise _fault(path, exc) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WriteFault(f"cannot write {path}: it is not a regular file", path=path, reason="not a regular file")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError as exc:
        raise _fault(path, exc) from None
    finally:
        os.close(fd)


@contextlib.contextmanager
def staged(path: str, *, folder: bool = False) -> Iterator[str]:
    """A temporary file (`folder`: an empty temporary folder) beside `path` for the caller to
    fill; when the block ends it is fsynced and renamed to `path`, replacing what is there (a
    folder replaces only an empty folder). An OSError inside the block is a `WriteFault`."""
    with _staged(path, folder=folder) as temporary:
        yield temporary
        _sync(temporary)
        os.replace(temporary, path)
        _sync_folder(os.path.dirname(path))


@contextlib.contextmanager
def _staged(path: str, *, folder: bool) -> Iterator[str]:
    """The temporary file or folder beside `path`, removed unless the block moved it into place."""
    parent = _make_folder(path)
    temporary = _temporary(path, parent, folder)
    try:
        yield temporary
    except OSError as exc:
        raise _fault(path, exc) from None
    finally:
        _remove(temporary)


def make_folders(folder: str) -> bool:
    """Make `folder` and every missing folder above it; False when it was there already. A file
    in the way is a `WriteFault` naming it."""
    existed = os.path.isdir(folder)
    _make_folders(os.path.abspath(folder), folder)
    return not existed


def _make_folder(path: str) -> str:
    parent = os.path.dirname(os.path.abspath(path))
    _make_folders(parent, path)
    return parent


def _make_folders(parent: str, path: str) -> None:
    """`parent` made with its ancestors, for writing `path` (the name errors give)."""
    try:
        os.makedirs(parent, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in _ancestors(parent) if os.path.lexists(p) and not os.path.isdir(p)), parent)
        blocker = blocker if os.path.isabs(path) else os.path.relpath(blocker)
        raise WriteFault(f"cannot write {path}: {blocker} is a file, where a folder should be", path=path,
                         reason="a file where a folder should be", blocker=blocker) from None
    except OSError as exc:
        raise _fault(path, exc) from None


def _ancestors(folder: str) -> list[str]:
    """`folder` and the folders above it, outermost first."""
    chain = [folder]
    while os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
    return chain[::-1]


def _temporary(path: str, parent: str, folder: bool) -> str:
    """A new name beside `path` (a dot file: editors and `ls` pass over it), created empty with
    the permissions the umask gives a new file, never one that exists."""
    for _ in range(100):
        temporary = os.path.join(parent, f".{os.path.basename(path)}.{secrets.token_hex(4)}.tmp")
        try:
            if folder:
                os.mkdir(temporary)
            else:
                os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return temporary
        except FileExistsError:
            continue
        except OSError as exc:
            raise _fault(path, exc) from None
    raise WriteFault(f"cannot write {path}: no free temporary name beside it", path=path,
                     reason="no free temporary name")  # pragma: no cover - 100 random names taken


def _write_all(temporary: str, data: bytes) -> None:
    fd = os.open(temporary, os.O_WRONLY | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _sync(temporary: str) -> None:
    """fsync the file, or every file in the folder, so the rename never publishes unwritten blocks."""
    if not os.path.isdir(temporary):
        files = [temporary]
    else:
        files = [os.path.join(top, name) for top, _, names in os.walk(temporary) for name in names]
    for name in files:
        fd = os.open(name, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _link_new(temporary: str, path: str) -> bool:
    """Give the written file the name `path` unless it is taken. A hard link fails when the name
    exists, so no race overwrites; where links are not supported the name is first reserved
    with O_EXCL (it holds an empty file until the rename)."""
    try:
        os.link(temporary, path)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
            raise
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            return False
        os.replace(temporary, path)
    _sync_folder(os.path.dirname(path))
    return True


def _sync_folder(folder: str) -> None:
    """Make the new name itself durable; some file systems cannot fsync a folder (no harm)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(temporary: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if os.path.isdir(temporary) and not os.path.islink(temporary):
            shutil.rmtree(temporary, ignore_errors=True)
        else:
            os.unlink(temporary)


def _fault(path: str, exc: OSError) -> WriteFault:
    reason = exc.strerror or str(exc)
    name = errno.errorcode.get(exc.errno or 0, "")
    return WriteFault(f"cannot write {path}: {reason}", path=path, reason=reason, errno=name)
