"""The watch loop: watchdog events → `plan.classify` → debounce → one `Watcher.update`.

An update brings the committed index to HEAD (`LiveTree.index`: the index's own planner and
writer, incremental), then refreshes the drafts and publishes the overlay (`LiveTree.publish`)
when the set of valid drafts or the indexed commit changed; every read of git, documents or the
index goes through the door (ops/live.py). Lost events (an inotify queue overflow, an observer that died) make the next
update a reconcile: the index is checked against HEAD and every draft is listed again from git.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, TextIO

from ..errors import ObsrepoError
from ..ops import Session
from ..ops.live import LiveTree, ValidDraft
from ..ops.surface import Issue, plural
from .plan import DOCUMENT_ROOTS, OVERFLOW, SCHEMA_ROOT, Debouncer, Event, WatchPlan, classify

_STOP = Event("stop", "")


class _Handler:
    """watchdog's handler protocol (`dispatch`): every event goes to the loop's queue."""

    def __init__(self, sink: Callable[[Event], None]) -> None:
        self.sink = sink

    def dispatch(self, event: Any) -> None:
        dest = getattr(event, "dest_path", "") or None
        self.sink(Event(event.event_type, _text(event.src_path), _text(dest) if dest else None, event.is_directory))


def _files_under(root: str, folder: str) -> set[str]:
    """Repository-relative paths of the files under `folder`."""
    found: set[str] = set()
    for top, _dirs, files in os.walk(os.path.join(root, folder)):
        rel = os.path.relpath(top, root).replace(os.sep, "/")
        found.update(f"{rel}/{name}" for name in files)
    return found


def _text(path: str | bytes) -> str:
    text = os.fsdecode(path)
    return text.replace(os.sep, "/")


class _LostEvents(logging.Handler):
    """watchdog logs an inotify queue overflow (it rebuilds its watches itself); the loop must
    reconcile, for events were dropped."""

    def __init__(self, sink: Callable[[Event], None]) -> None:
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.sink(Event(OVERFLOW, ""))


class Watcher:
    def __init__(self, session: Session, *, committed_only: bool = False, quiet: float = 0.1, max_wait: float = 1.0,
                 out: TextIO | None = None, verbose: bool = True) -> None:
        self.live = LiveTree(session)
        self.root = self.live.root
        self.index_file = self.live.index_file
        self.committed_only = committed_only
        self.out = out or sys.stderr
        self.verbose = verbose
        self.events: queue.Queue[Event] = queue.Queue()
        self.debounce = Debouncer(quiet, max_wait)
        self.indexed: str | None = None
        self.overlay_key: tuple | None = None
        self.reported: dict[str, tuple[str, ...]] = {}
        self.stopping = threading.Event()
        self.observer: Any = None
        self.watched: dict[str, tuple[Any, tuple[int, int]]] = {}  # folder → (its watch, the folder's device and inode)
        self.updates = 0
        self.lock: Any = None  # the watch lock, while `run` holds it
        self.git_dirs = self.live.git_dirs()

    # -- events ----------------------------------------------------------------------------
    def put(self, event: Event) -> None:
        self.events.put(event)

    def start_observer(self) -> None:
        from watchdog.observers import Observer

        self.observer = Observer()
        self.watched = {}
        handler = _Handler(self.put)
        self.observer.schedule(handler, self.root, recursive=False)  # document folders coming into being
        for git_dir in self.git_dirs:
            self.observer.schedule(handler, git_dir, recursive=False)  # HEAD, packed-refs
        refs = os.path.join(self.git_dirs[-1], "refs")
        if os.path.isdir(refs):
            self.observer.schedule(handler, refs, recursive=True)
        self._watch_folders()
        self.observer.start()
        logging.getLogger("watchdog").addHandler(_LostEvents(self.put))

    def _watch_folders(self) -> set[str]:
        """Watch each document folder (and the schema folder) that exists: anew when it is
        another folder than the one watched (deleted by a checkout and made again, moved away
        and replaced: a watch follows the folder it was set on); a watch on a folder that is gone
        is dropped. Returns the folders watched anew."""
        added: set[str] = set()
        for folder in (*DOCUMENT_ROOTS, SCHEMA_ROOT):
            full = os.path.join(self.root, folder)
            try:
                st = os.stat(full)
                identity: tuple[int, int] | None = (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None
            except OSError:
                identity = None
            current = self.watched.get(folder)
            if current is not None and current[1] == identity:
                continue
            if current is not None:
                del self.watched[folder]
                with contextlib.suppress(Exception):  # its emitter may have stopped with the folder
                    self.observer.unschedule(current[0])
            if identity is None or self.observer is None:
                continue
            try:
                self.watched[folder] = (self.observer.schedule(_Handler(self.put), full, recursive=True), identity)
            except OSError:  # gone again: the next event brings it back
                continue
            added.add(folder)
        return added

    def stop_observer(self) -> None:
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=5)
            self.observer = None

    def stop(self, *_args: Any) -> None:
        self.stopping.set()
        self.events.put(_STOP)

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> None:
        """Until SIGINT or SIGTERM (or `stop`): hold the watch lock, update on events."""
        with self.live.watch_lock() as self.lock:
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGTERM, self.stop)
                signal.signal(signal.SIGINT, self.stop)
            self._watch()

    def run_in_background(self) -> threading.Thread:
        """Take the watch lock now (a second watcher fails here, before anything else starts),
        then watch on a daemon thread until `stop` (`obsrepo mcp --watch`)."""
        lock = self.live.watch_lock()
        self.lock = lock.__enter__()

        def watch() -> None:
            try:
                self._watch()
            except Exception as exc:  # noqa: BLE001 - the server goes on with committed answers
                self.out.write(f"obsrepo watch: stopped: {type(exc).__name__}: {exc}\n")
                self.out.flush()
            finally:
                lock.__exit__(None, None, None)

        thread = threading.Thread(target=watch, daemon=True, name="obsrepo-watch")
        thread.start()
        return thread

    def _observer_broken(self) -> bool:
        """The observer, or one of its folder watches (an emitter thread), has died."""
        observer = self.observer
        return not observer.is_alive() or any(not emitter.is_alive() for emitter in list(observer.emitters))

    def _thread_died(self, args: Any) -> None:
        """`threading.excepthook` while watching: a folder watch of ours that fails (watchdog
        raises when a watched folder vanishes as it is watched again) is one line and a
        reconcile, never a traceback; any other thread goes to the hook that was there."""
        from watchdog.observers.api import EventEmitter

        if isinstance(args.thread, EventEmitter):  # ours: the only watchdog threads of the process
            self.out.write(f"obsrepo watch: a folder watch stopped ({args.exc_type.__name__}: {args.exc_value}); "
                           "watching again\n")
            self.out.flush()
            self.put(Event(OVERFLOW, ""))
            return
        self._previous_hook(args)

    def _watch(self) -> None:
        self._previous_hook = threading.excepthook
        threading.excepthook = self._thread_died
        self.start_observer()
        try:
            self._say(f"watching {self.root} (index {self.index_file})")
            self.update(WatchPlan(reconcile=True))  # an index that cannot be written ends the watch at once
            self._loop()
        finally:
            self.stop_observer()
            if threading.excepthook == self._thread_died:
                threading.excepthook = self._previous_hook

    def _loop(self) -> None:
        pending = WatchPlan()
        while not self.stopping.is_set():
            deadline = self.debounce.deadline()
            timeout = 0.5 if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                event: Event | None = self.events.get(timeout=timeout)
            except queue.Empty:
                event = None
            while event is not None:
                if event is _STOP:
                    return
                plan = classify([event], self.root, self.git_dirs)
                if not plan.empty:
                    pending.merge(plan)
                    self.debounce.add(time.monotonic())
                try:
                    event = self.events.get_nowait()
                except queue.Empty:
                    event = None
            if not self._intact():  # the index or the watch lock deleted by hand: build and publish again
                pending.reconcile = True
                self.debounce.add(time.monotonic())
            if self.observer is not None and self._observer_broken():  # events are lost: watch anew, reconcile
                self.stop_observer()
                self.start_observer()
                pending.reconcile = True
                self.debounce.add(time.monotonic())
            if self.debounce.due(time.monotonic()):
                self.debounce.reset()
                plan, pending = pending, WatchPlan()
                self.safe_update(plan)

    def _intact(self) -> bool:
        """Whether the index built and the watch lock are still there (a stat each, every
        wake-up). A lock taken by another watcher meanwhile stops this one (IndexFault)."""
        held = self.lock is None or self.lock.held()
        if self.indexed is not None and not self.live.index_exists():
            self.indexed = self.overlay_key = None
            return False
        return held

    def safe_update(self, plan: WatchPlan) -> None:
        try:
            self.update(plan)
        except ObsrepoError as exc:  # git busy mid-rebase, an index that cannot be written: next event retries
            self.out.write(f"obsrepo watch: {exc.code}: {exc.message}\n")
            self.out.flush()

    # -- one update --------------------------------------------------------------------------
    def update(self, plan: WatchPlan) -> dict[str, Any]:
        """Carry out one plan; returns what it did (also written to the status sidecar)."""
        started = time.perf_counter()
        added = self._watch_folders()
        if added:
            plan.rescan = True
        if SCHEMA_ROOT in added and self.indexed is not None:  # written before its folder was watched
            plan.schemas |= _files_under(self.root, SCHEMA_ROOT)
        done: dict[str, Any] = {"commit": self.indexed, "indexed": False}
        head = self.live.head()
        moved: set[str] | None = set()
        if head is not None and (head != self.indexed or plan.reconcile or plan.git):
            old = self.indexed
            result = self.live.index(head)
            done.update(commit=result.commit, indexed=not result.unchanged, added=result.added, removed=result.removed)
            moved = self.live.changed_paths(old, result.commit) if old and old != result.commit else (None if old is None else set())
            self.indexed = result.commit
        if self.committed_only or self.indexed is None:
            self._publish([])
            done["drafts"] = 0
        else:
            everything = plan.reconcile or plan.rescan or moved is None
            candidates = plan.paths | (moved or set()) | (self.live.drafted if moved else set())
            notes = self.live.refresh(candidates, everything)
            valid, problems = self.live.judge()
            self._publish(valid)
            self._report(problems, notes)
            done.update(drafts=len(valid), rejected=len(problems))
        if plan.schemas:
            self._check_schemas(plan.schemas)
        done["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)
        self._record(done)
        if self.verbose and (done.get("indexed") or plan.paths or plan.reconcile):
            where = f"at {self.indexed[:12]}" if self.indexed else "no commit yet (drafts show from the first one)"
            self._say(f"{where}: {plural(done.get('drafts', 0), 'draft')} in the overlay, updated in {done['duration_ms']:.0f} ms")
        self.updates += 1  # last: whoever counts updates finds each one recorded and said
        return done

    def _publish(self, valid: list[ValidDraft]) -> None:
        key = (self.indexed, tuple((draft.path, draft.blob) for draft in valid))
        if key == self.overlay_key:
            return
        self.live.publish(self.indexed or "", valid)
        self.overlay_key = key

    def _report(self, problems: dict[str, list[Issue]], notes: list[Issue]) -> None:
        for path in list(self.reported):
            if path not in problems:
                del self.reported[path]
        lines = [n.as_text() for n in notes]
        for path, issues in sorted(problems.items()):
            text = tuple(i.as_text() for i in sorted(issues))
            if self.reported.get(path) != text:
                self.reported[path] = text
                lines.extend(text)
        if lines:
            self.out.write("".join(line + "\n" for line in lines))
            self.out.flush()

    def _check_schemas(self, paths: set[str]) -> None:
        lines = [issue.as_text() for issue in self.live.schema_problems(paths)]
        if lines:
            self.out.write("".join(line + "\n" for line in lines))
            self.out.flush()

    def _record(self, done: dict[str, Any]) -> None:
        self.live.record({
            "pid": os.getpid(), "commit": self.indexed, "overlay_documents": done.get("drafts", 0),
            "rejected_drafts": done.get("rejected", 0), "duration_ms": done["duration_ms"],
            "updated_at": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        })

    def _say(self, text: str) -> None:
        if self.verbose:
            self.out.write(f"obsrepo watch: {text}\n")
            self.out.flush()
