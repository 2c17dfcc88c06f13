"""Read your own commit (docs/design.md §8a): a reader whose HEAD is ahead of the indexed
commit never answers from the older commit. When a watcher holds the index, the reader first
waits (bounded) for the watcher's update, which is usually on its way already (a commit is seen
within ~100-250 ms); after that, or without a watcher, the reader brings the index to HEAD
itself. The wait polls the status sidecar every build writes once it has published, which costs
a `stat` and a small read, never a DuckDB connection; the reader still checks the commit of the
index it opens afterwards, so the sidecar is only a signal."""

from __future__ import annotations

import time

from .paths import read_json, status_path
from .watch_lock import watcher_pid

WATCHER_WAIT = 10.0  # seconds: the bound of §8a; past it the reader updates the index itself
_FIRST_POLL, _LAST_POLL = 0.005, 0.05


def published_commit(path: str) -> str | None:
    """The commit of the last published update of the index at `path`, as its sidecar says."""
    status = read_json(status_path(path))
    commit = status.get("commit")
    return commit if isinstance(commit, str) and status.get("published", True) else None


def wait_for_watcher(path: str, head: str, timeout: float | None = None) -> bool:
    """Wait until the watcher of the index at `path` has published `head`; True when it has,
    False when no watcher runs (any more) or `timeout` (default WATCHER_WAIT) passed first."""
    deadline = time.monotonic() + (WATCHER_WAIT if timeout is None else timeout)
    delay = _FIRST_POLL
    while True:
        if published_commit(path) == head:
            return True
        left = deadline - time.monotonic()
        if left <= 0 or watcher_pid(path) is None:
            return False
        time.sleep(min(delay, left))
        delay = min(delay * 2, _LAST_POLL)
