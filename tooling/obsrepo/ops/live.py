"""What `obsrepo watch` asks of the repository (docs/design.md §13), through the door: the index
brought to a commit, the work tree's drafts refreshed and judged against it, the overlay of
the valid ones published, the watch lock and the status sidecar. The watcher keeps the events
and the timing; everything that reads git, documents or the index is here.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from ..format.report import Issue
from .session import Session


@dataclass(frozen=True)
class Indexed:
    """One update of the committed index: the commit it is at, and what changed."""

    commit: str
    unchanged: bool
    added: int
    removed: int


@dataclass(frozen=True)
class ValidDraft:
    """A draft that passes the check: its path, its blob id and the record the overlay holds."""

    path: str
    blob: str
    record: dict[str, Any]


class LiveTree:
    """One repository's index kept at HEAD, and its work tree's drafts as the overlay."""

    def __init__(self, session: Session) -> None:
        from ..index.drafts import DraftState

        self.session = session
        self.root = session.root.replace(os.sep, "/")
        self.index_file = session.index_file
        self._drafts = DraftState()

    # -- git ------------------------------------------------------------------------------------
    def git_dirs(self) -> tuple[str, ...]:
        """The git directory and the common one (a linked work tree keeps HEAD in the first and
        the refs in the second), with / separators."""
        return tuple(dict.fromkeys(p.replace(os.sep, "/") for p in self.session.git.dirs()))

    def head(self) -> str | None:
        """HEAD's commit, or None before the first commit."""
        git = self.session.git
        return git.resolve("HEAD") if git.has_head() else None

    def changed_paths(self, old: str, new: str) -> set[str]:
        """Document paths that differ between two commits."""
        from ..format.vocabulary import DOCUMENT_ROOTS

        out = self.session.git.run("diff", "--name-only", "-z", "--no-renames", old, new, "--", *DOCUMENT_ROOTS,
                                   check=False)
        return {raw.decode("utf-8", "surrogateescape") for raw in out.split(b"\0") if raw}

    # -- the committed index --------------------------------------------------------------------
    def index(self, commit: str) -> Indexed:
        """Bring the index to `commit` (incremental when it can be)."""
        from .registry import run
        from .review import Index

        result = run(self.session, Index(commit)).result
        return Indexed(result.commit, result.unchanged, result.added, result.removed)

    def watch_lock(self) -> AbstractContextManager[Any]:
        """One watcher per index: held while watching (`.held()` says whether it still is)."""
        from ..index import IndexFiles

        return IndexFiles(self.index_file).watch_lock()

    def index_exists(self) -> bool:
        return os.path.exists(self.index_file)

    # -- the drafts -----------------------------------------------------------------------------
    @property
    def drafted(self) -> set[str]:
        """The paths of the drafts known."""
        return set(self._drafts.drafts)

    def refresh(self, candidates: set[str], everything: bool = False) -> list[Issue]:
        """Bring the drafts up to date with the work tree (see index/drafts.py `refresh`); returns
        problems of committed paths modified in the work tree."""
        from ..index.drafts import refresh

        return refresh(self._drafts, self.session.git, candidates, everything)

    def judge(self) -> tuple[list[ValidDraft], dict[str, list[Issue]]]:
        """The valid observation drafts, and the problems of the others by path, against the
        indexed commit and each other."""
        from ..index.drafts import judge

        valid, problems = judge(self._drafts, self.index_file)
        return [ValidDraft(path, blob, record) for path, blob, record in valid], problems

    def publish(self, commit: str, valid: list[ValidDraft]) -> None:
        """The overlay: `valid` drafts over the index at `commit` (none: an empty overlay)."""
        from ..index.drafts_table import write_overlay

        write_overlay(self.index_file, commit, [(d.path, d.blob, dict(d.record)) for d in valid])

    def record(self, status: dict[str, Any]) -> None:
        """The status sidecar `obsrepo status` reads (`<index>.watch.json`)."""
        from ..index.paths import write_json

        write_json(self.index_file + ".watch.json", status)

    # -- entity schemas -------------------------------------------------------------------------
    def schema_problems(self, paths: set[str]) -> list[Issue]:
        """Problems of the entity schemas at `paths` in the work tree (those that can be read)."""
        from ..format.entity_schema import read_entity_schema

        issues: list[Issue] = []
        for path in sorted(paths):
            try:
                with open(os.path.join(self.root, path), "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            issues.extend(read_entity_schema(path, data)[1])
        return issues
