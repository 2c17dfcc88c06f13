"""`obsrepo status`: which commit the index holds, how far HEAD is ahead of it, whether a
watcher runs and how many uncommitted drafts its overlay holds, and the last update."""

from __future__ import annotations

from typing import Any

from ..errors import IndexFault
from ..gitstore import Git
from ..index.identity_table import identity_state
from ..index.paths import read_json, status_path
from ..index.reader import OVERLAY_DB, attach_overlay, open_reader
from ..index.vectors import EmbedderSource, configured_state
from ..index.watch_lock import watcher_pid


def index_status(git: Git, path: str, embedder_source: EmbedderSource | None = None) -> dict[str, Any]:
    """The state; `semantic` is the configured embedder's (docs/design.md §8b): its fingerprint,
    the distinct texts with and without its vectors, and the index's fingerprint when that is
    another one (`indexed_fingerprint`); `identity` the identity weights' fingerprint and the
    queue's size (docs/design.md §20)."""
    head = git.resolve("HEAD")  # GIT_ERROR in a repository without commits, like every reader
    indexed: str | None = None
    drafts = 0
    semantic = None
    identity = None
    problem = None
    try:
        con = open_reader(path, fts=False, sandbox=False)
    except IndexFault as exc:
        con = None
        problem = exc.message
    if con is not None:
        try:
            indexed = con.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()[0]
            semantic = configured_state(git, con, embedder_source)
            identity = identity_state(con)
            if attach_overlay(con, path, indexed):
                drafts = con.execute(f"SELECT count(*) FROM {OVERLAY_DB}.overlay_obs").fetchone()[0]
        finally:
            con.close()
    behind = None
    if indexed and head:
        behind = int(git.run("rev-list", "--count", f"{indexed}..{head}", check=False).decode().strip() or 0) \
            if indexed != head else 0
    last = read_json(status_path(path))
    pid = watcher_pid(path)
    return {
        "index": path,
        "indexed_commit": indexed,
        "head": head,
        "behind": behind,
        "watcher": ({"pid": pid, **{k: v for k, v in read_json(path + ".watch.json").items() if k != "pid"}}
                    if pid is not None else None),
        "overlay_documents": drafts,
        "last_update": {key: last[key] for key in ("updated_at", "duration_ms", "commit", "full", "added", "removed")
                        if key in last} or None,
        "problem": problem,
        "semantic": semantic,
        "identity": identity,
    }
