"""The watch lock: one `obsrepo watch` per index, an exclusive `flock` on `<index>.watch` that
holds the watcher's pid, and the question readers ask of it (is a watcher running, which one)."""

from __future__ import annotations

import contextlib
import os
from typing import Any

from ..errors import IndexFault
from .paths import private_folder, unwritable, watch_lock_path


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


