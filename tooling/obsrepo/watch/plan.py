"""From file-system events to updates, with no I/O: what changed (git's refs, documents,
entity schemas) and when to act (debounce).

A commit, checkout, pull, rebase or reset touches many files and several refs in a few
milliseconds; an editor saves through a temporary file and a rename; `git` writes
`<ref>.lock` and renames it. Events are coalesced until `quiet` seconds pass without one, or
`max_wait` seconds after the first, and then become one `WatchPlan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ops.surface import DOCUMENT_ROOTS, ENTITY_SCHEMAS_DIR, is_document_name

SCHEMA_ROOT = ENTITY_SCHEMAS_DIR.rstrip("/")
OVERFLOW = "overflow"  # the event kind of a lost-events notice (queue overflow, observer error)


@dataclass(frozen=True)
class Event:
    kind: str  # created | modified | deleted | moved | closed | overflow
    path: str  # absolute, with / separators
    dest: str | None = None  # a move's destination
    is_dir: bool = False


@dataclass
class WatchPlan:
    git: bool = False  # HEAD, a ref or packed-refs changed: bring the index to the tip
    paths: set[str] = field(default_factory=set)  # document paths (repository-relative) to look at again
    rescan: bool = False  # a folder came or went: list the drafts again from git
    schemas: set[str] = field(default_factory=set)  # entity schemas touched in the work tree
    reconcile: bool = False  # events were lost: compare everything with git again

    @property
    def empty(self) -> bool:
        return not (self.git or self.paths or self.rescan or self.schemas or self.reconcile)

    def merge(self, other: WatchPlan) -> None:
        self.git |= other.git
        self.paths |= other.paths
        self.rescan |= other.rescan
        self.schemas |= other.schemas
        self.reconcile |= other.reconcile


def _relative(path: str, folder: str) -> str | None:
    folder = folder.rstrip("/")
    if path == folder:
        return ""
    return path[len(folder) + 1:] if path.startswith(folder + "/") else None


def _is_ref(rel: str) -> bool:
    if rel.endswith(".lock"):
        return False
    return rel in ("HEAD", "packed-refs") or rel.startswith("refs/")


def classify(events: list[Event], root: str, git_dirs: tuple[str, ...]) -> WatchPlan:
    """The plan for a batch of events. `git_dirs`: the git directory and the common one (a
    linked work tree keeps HEAD in the first and the refs in the second)."""
    plan = WatchPlan()
    for event in events:
        if event.kind == OVERFLOW:
            plan.reconcile = True
            continue
        if event.kind not in ("created", "modified", "deleted", "moved", "closed"):
            continue  # opened, closed without writing, attributes
        for path in (event.path, event.dest):
            if path is None:
                continue
            if any(_is_ref(rel) for rel in (_relative(path, d) for d in git_dirs) if rel is not None):
                plan.git = True
                continue
            rel = _relative(path, root)
            if rel is None or rel == "":
                continue
            if rel.startswith(SCHEMA_ROOT + "/"):
                if not event.is_dir:
                    plan.schemas.add(rel)
                continue
            if event.is_dir and event.kind != "modified" and SCHEMA_ROOT.startswith(rel + "/"):
                plan.rescan = True  # the schema folder (or its parent) came or went: watched anew
                continue
            if rel.split("/", 1)[0] not in DOCUMENT_ROOTS:
                continue
            if event.is_dir:
                if event.kind != "modified":
                    plan.rescan = True  # a new, moved or deleted folder: its files are listed again
            elif is_document_name(rel):
                plan.paths.add(rel)
    return plan


class Debouncer:
    """When to act on a burst: `quiet` seconds after the last event, at most `max_wait` after the first."""

    def __init__(self, quiet: float = 0.1, max_wait: float = 1.0) -> None:
        self.quiet = quiet
        self.max_wait = max_wait
        self.first: float | None = None
        self.last: float | None = None

    def add(self, now: float) -> None:
        if self.first is None:
            self.first = now
        self.last = now

    @property
    def pending(self) -> bool:
        return self.first is not None

    def deadline(self) -> float | None:
        if self.first is None or self.last is None:
            return None
        return min(self.last + self.quiet, self.first + self.max_wait)

    def due(self, now: float) -> bool:
        deadline = self.deadline()
        return deadline is not None and now >= deadline

    def reset(self) -> None:
        self.first = self.last = None
