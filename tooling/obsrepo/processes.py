"""Worker pools that start safely and die with their parent, and lock waits that are bounded
and say what they wait for (docs/design.md §8b, "Killed work never blocks the next command").

A pool's workers come from a `forkserver` (else `spawn`): a fresh process that forks them, so
no worker inherits a lock's descriptor, a thread's state or anything else the caller holds
open (the index writer holds its lock for the whole build). Each worker asks the kernel to
kill it when its parent dies (PR_SET_PDEATHSIG on Linux; elsewhere a watchdog thread notices
the parent gone), and the fork server itself ends when the caller does, so `kill -9` of the
caller leaves no process behind. This module imports nothing of ours but the errors."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

from .errors import IndexFault

START_METHOD = "OBSREPO_POOL_START"  # fork, forkserver or spawn: for the benchmark that compares them
LOCK_WAIT = "OBSREPO_LOCK_WAIT"  # seconds a command waits for a lock before INDEX_ERROR
DEFAULT_LOCK_WAIT = 120.0
SAY_AFTER = 2.0  # seconds of waiting before stderr says what for


def cores() -> int:
    """The processors this process may use (`os.process_cpu_count()` where present, then its
    affinity mask, then every processor): pools are sized to it, never to a constant."""
    counted = getattr(os, "process_cpu_count", None)
    found = counted() if counted is not None else None
    if found is None and hasattr(os, "sched_getaffinity"):
        found = len(os.sched_getaffinity(0))
    return max(1, found or os.cpu_count() or 1)


def start_method() -> str:
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    chosen = os.environ.get(START_METHOD, "")
    if chosen in methods:
        return chosen
    return "forkserver" if "forkserver" in methods else "spawn"


def pool(processes: int, initializer: Callable[..., None] | None = None, initargs: Sequence[Any] = (),
         preload: Sequence[str] = ()) -> Any:
    """A `multiprocessing` pool of `processes` workers that inherit nothing the caller holds
    and die with it. `preload`: modules the fork server imports once, so each worker starts
    with them loaded (the worker's own module, say)."""
    import multiprocessing

    method = start_method()
    context = multiprocessing.get_context(method)
    if method == "forkserver" and preload:
        context.set_forkserver_preload(["obsrepo.processes", *preload])  # taken when the server starts
    return context.Pool(processes, initializer=_start_worker, initargs=(os.getpid(), initializer, tuple(initargs)))


def warm(preload: Sequence[str]) -> None:
    """Start the fork server (importing `preload`) on a thread now, while the caller does other
    work, so that the pool it asks for later starts at once (~0.3 s saved on a full build)."""
    if start_method() != "forkserver":
        return
    import multiprocessing
    from multiprocessing import forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload(["obsrepo.processes", *preload])
    threading.Thread(target=_quietly, args=(forkserver.ensure_running,), daemon=True, name="obsrepo-forkserver").start()


def _quietly(start: Callable[[], None]) -> None:
    with contextlib.suppress(Exception):  # the pool that needs it starts it again, and says why it cannot
        start()


def _start_worker(caller: int, initializer: Callable[..., None] | None, initargs: tuple) -> None:
    _release_server()
    die_with_parent(caller)
    if initializer is not None:
        initializer(*initargs)


def _release_server() -> None:
    """Close this worker's copy of the fork server's "alive" descriptor. The server ends when
    every holder of that descriptor has; a worker holding it would keep the server waiting
    after the caller was killed, and the worker waiting for the server to die: neither ends."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(fd, int):
        with contextlib.suppress(OSError):
            os.close(fd)
        server._forkserver_alive_fd = None  # type: ignore[union-attr]


def die_with_parent(caller: int) -> None:
    """Make this process end when its parent does: the kernel's parent-death signal on Linux
    (delivered even to a stopped process), else a watchdog thread. If the caller that asked
    for the pool is already gone, end now. (A fork server's worker has the server for parent;
    the server ends with the caller, see `_release_server`.)"""
    if not _death_signal():
        threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True, name="obsrepo-watchdog").start()
    if not _alive(caller):  # it died before the signal was asked for: none will come
        os._exit(1)


def _death_signal() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(1, signal.SIGKILL, 0, 0, 0) == 0  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_wait() -> float:
    """How long a command waits for a lock: OBSREPO_LOCK_WAIT seconds, else DEFAULT_LOCK_WAIT."""
    given = os.environ.get(LOCK_WAIT, "")
    try:
        seconds = float(given) if given else DEFAULT_LOCK_WAIT
    except ValueError:
        raise IndexFault(f"{LOCK_WAIT} is {given!r}: give a number of seconds, like 120") from None
    return max(0.0, seconds)


@contextlib.contextmanager
def exclusive(handle: IO[Any], what: str, path: str) -> Iterator[None]:
    """Hold an exclusive `flock` on `handle` (the file `path`) for the block. Waiting for it
    says on stderr, after SAY_AFTER seconds, which lock and which process holds it, and gives
    up with INDEX_ERROR after `lock_wait()` seconds."""
    import fcntl

    bound = lock_wait()
    started = time.monotonic()
    said = False
    delay = 0.005
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            pass
        waited = time.monotonic() - started
        if waited >= bound:
            raise IndexFault(f"gave up waiting for {what} after {waited:.0f} s: {path} is locked{_holder(handle)}; "
                             f"set {LOCK_WAIT} (seconds) to wait longer", path=path)
        if not said and waited >= SAY_AFTER:
            print(f"obsrepo: waiting for {what} ({path}, locked{_holder(handle)}); giving up after {bound:.0f} s",
                  file=sys.stderr, flush=True)
            said = True
        time.sleep(min(delay, max(0.0, bound - waited)))
        delay = min(delay * 2, 0.1)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)


def _holder(handle: IO[Any]) -> str:
    """` by pid N (command)` for the process the kernel lists as holding the lock (/proc/locks
    on Linux), else nothing."""
    try:
        st = os.fstat(handle.fileno())
        with open("/proc/locks", encoding="ascii") as locks:
            lines = locks.read().splitlines()
    except OSError:
        return ""
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in lines:
        fields = line.split()
        if len(fields) >= 6 and fields[1] != "->" and fields[5] == device:
            pid = fields[4]
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as source:
                    command = source.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except OSError:
                command = ""
            return f" by pid {pid}" + (f" ({command[:80]})" if command else "")
    return ""


# -- what a process of ours refuses to import ----------------------------------------------

def without_pandas(installed_too: bool = False) -> None:
    """DuckDB's Python client tries `import pandas` for every parameter it converts; when pandas
    is not installed each failed attempt walks sys.path again (~0.1 ms, dozens per query). A
    finder at the head of `sys.meta_path` makes each such import fail at once (~4 µs) with the
    ModuleNotFoundError every importer expects. (A `None` in `sys.modules`, the usual trick, is
    taken for a module by pyarrow's pandas shim, which broke every Arrow array once numpy was
    installed.) Nothing changes when pandas is installed, unless `installed_too`: the program's
    own process (`ops.surface.own_process`) never hands DuckDB a DataFrame, and importing an
    installed pandas at the first parameter costs ~0.4 s of CPU, most of a short command."""
    import importlib.util
    import sys

    if any(isinstance(finder, _NoPandas) for finder in sys.meta_path):
        return
    if "pandas" not in sys.modules and (installed_too or importlib.util.find_spec("pandas") is None):
        sys.meta_path.insert(0, _NoPandas())


def refuse_pandas() -> None:
    """Make `import pandas` fail at once in this process, installed or not: for a worker that
    builds Arrow batches from Python values, where pyarrow would otherwise import pandas
    (~0.5 s) only to ask whether a value is a DataFrame."""
    import sys

    if not any(isinstance(finder, _NoPandas) for finder in sys.meta_path) and "pandas" not in sys.modules:
        sys.meta_path.insert(0, _NoPandas())


class _NoPandas(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """A meta path finder for an uninstalled pandas. It answers with a spec whose loader fails,
    rather than raising from `find_spec`, so `importlib.util.find_spec("pandas")` still answers
    instead of raising; an import of pandas then fails at once, as it would anyway."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "pandas" and not name.startswith("pandas."):
            return None
        return importlib.machinery.ModuleSpec(name, self)

    def create_module(self, spec: Any) -> Any:
        raise ModuleNotFoundError(f"No module named '{spec.name}'", name=spec.name)

    def exec_module(self, module: Any) -> None:  # never reached: create_module fails first
        raise ModuleNotFoundError(f"No module named '{module.__name__}'", name=module.__name__)
