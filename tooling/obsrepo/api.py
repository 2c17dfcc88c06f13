"""The library facade: `Repository(path)`. The CLI and the MCP server both call it.

    from obsrepo import Repository
    repo = Repository(".", tenant={"org": "northwind"})
    repo.index()
    page = repo.query(QueryRequest(scopes=("task/42",)))
    rows = repo.sql("SELECT count(*) AS n FROM observations")
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .errors import GitError, UsageError
from .gitstore import Git
from .read.query import QueryRequest


class Repository:
    def __init__(self, path: str = ".", *, index: str | None = None, tenant: dict[str, str] | None = None,
                 progress: Callable[[int, int], None] | None = None, overlay: bool = True) -> None:
        """`progress(done, total)` is called while a missing or outdated index is built for a read.
        `overlay`: whether `query` shows a running watcher's uncommitted drafts (docs/design.md §13)."""
        git = Git.discover(path)
        if git is None:
            raise GitError(f"{os.path.abspath(path)} is not inside a git repository")
        self.git = git
        self.root = git.root
        from .index.store import index_path

        self.index_file = index_path(self.root, index)
        self.tenant = dict(tenant or {})
        self.progress = progress
        self.overlay = overlay

    # -- index -------------------------------------------------------------------------
    def index(self, rev: str | None = None, *, full: bool = False, strict: bool = False,
              progress: Callable[[int, int], None] | None = None) -> Any:
        """Build or update the index to REV (default HEAD); returns a BuildResult.
        With `strict`, invalid documents in history leave the previous index published."""
        from .index import IndexFiles, build_index

        target = self.git.resolve(rev or "HEAD", "--rev")
        return build_index(self.git, IndexFiles(self.index_file), target, full=full, progress=progress, strict=strict)

    def _reader(self, **settings: Any) -> Any:
        from .index import IndexFiles, reader_at_least
        from .index.store import watcher_pid

        head: str | None = self.git.resolve("HEAD")  # GIT_ERROR when the repository has no commits yet
        if watcher_pid(self.index_file) is not None:
            head = None  # a watcher keeps the index at HEAD: a reader never waits on a write
        return reader_at_least(self.git, IndexFiles(self.index_file), head, progress=self.progress, **settings)

    def _read(self, work: Callable[[Any], Any], at: str | None = None, tenant: dict[str, str] | None = None,
              scoped: bool = True, overlay: bool = False, **settings: Any) -> Any:
        """Run `work(scope)` over a read scope of commit `at` (default: the indexed tip) and the
        caller's binding (or `tenant`, a narrower one); `scoped=False` hands `work` the bare
        connection instead. If DuckDB reports a damaged file on the way (a bad block checksum,
        a missing table), rebuild the index from git and run it once more."""
        from .index import IndexFiles, build_index
        from .index.store import damage_errors
        from .read.scope import ReadScope

        at_sha = self.git.resolve(at, "--at") if at else None
        for attempt in (1, 2):
            con = self._reader(overlay=overlay and at_sha is None, **settings)
            try:
                if not scoped:
                    return work(con)
                scope = ReadScope(con, self.git, at_sha, self.tenant if tenant is None else tenant, overlay=overlay)
                try:
                    return work(scope)
                finally:
                    scope.close()
            except damage_errors() as exc:
                if attempt == 2:
                    from .errors import IndexFault

                    raise IndexFault(f"the index is damaged and rebuilding did not help: {exc}") from None
            finally:
                con.close()
            build_index(self.git, IndexFiles(self.index_file), self.git.resolve("HEAD"), full=True)
        raise AssertionError("unreachable")

    # -- queries -----------------------------------------------------------------------
    def query(self, request: QueryRequest, at: str | None = None, where: dict[str, str] | None = None,
              overlay: bool | None = None) -> dict[str, Any]:
        """Scoped observations. `where` narrows by tenant keys (--org/--project/…) inside the
        caller's binding; it can never widen it. While `obsrepo watch` runs, the page also holds
        the work tree's valid drafts (records with `uncommitted: true`) unless `overlay` (default:
        the repository's setting) is False or `at` is given."""
        from .read.query import run_query

        request.validate()
        binding = dict(self.tenant)
        for key, value in (where or {}).items():
            if key in binding and binding[key] != value:
                return {"observations": [], "total": 0, "limit": request.limit, "offset": request.offset,
                        "at_commit": self.git.resolve(at, "--at") if at else None}
            binding[key] = value
        drafts = self.overlay if overlay is None else overlay
        return self._read(lambda scope: run_query(scope, request), at, binding, overlay=drafts)

    def snapshot(self, entity: str, *, at: str | None = None, as_of: str | None = None,
                 explain: bool = False) -> dict[str, Any]:
        """The entity's snapshot (seed 003's shape) at commit `at`, as of valid time `as_of`."""
        from .read.snapshots import parse_as_of, snapshot

        moment = parse_as_of(as_of) if as_of else None
        return self._read(lambda scope: snapshot(scope, entity, as_of=moment, explain=explain), at)

    def provenance(self, entity: str, field: str, *, at: str | None = None) -> dict[str, Any]:
        """Field → winning observation → file, commit, author, source_ref, interpretation."""
        from .read.snapshots import provenance

        return self._read(lambda scope: provenance(scope, entity, field), at)

    def _entities_call(self, name: str, at: str | None, *args: Any, **kwargs: Any) -> Any:
        from .read import entities

        function = getattr(entities, name)
        return self._read(lambda scope: function(scope, *args, **kwargs), at)

    def entities(self, entity_type: str | None = None, *, limit: int = 50, offset: int = 0, at: str | None = None) -> dict:
        """retrieve_entities: every entity with its snapshot, by entity id."""
        return self._entities_call("list_entities", at, entity_type, limit=limit, offset=offset)

    def find(self, identifier: str, entity_type: str | None = None, *, limit: int = 50, offset: int = 0,
             at: str | None = None) -> dict:
        """Entities whose key, name, email or other identifying field matches, whatever the case,
        white space or punctuation."""
        return self._entities_call("find", at, identifier, entity_type, limit=limit, offset=offset)

    def observations(self, entity: str, *, limit: int = 50, offset: int = 0, at: str | None = None) -> dict:
        """list_observations: the entity's observations (merged ones included), newest first."""
        return self._entities_call("observations_of", at, entity, limit=limit, offset=offset)

    def relationships(self, entity: str, *, direction: str = "both", types: tuple[str, ...] = (),
                      at: str | None = None) -> dict:
        return self._entities_call("relationships", at, entity, direction=direction, types=types)

    def related(self, entity: str, *, types: tuple[str, ...] = (), direction: str = "both", hops: int = 1,
                at: str | None = None) -> dict:
        return self._entities_call("related", at, entity, types=types, direction=direction, hops=hops)

    def timeline(self, *, entity: str | None = None, event_type: str | None = None, after: str | None = None,
                 before: str | None = None, limit: int = 1000, offset: int = 0, at: str | None = None) -> dict:
        from .times import parse_time

        return self._entities_call(
            "timeline", at, entity=entity, event_type=event_type, limit=limit, offset=offset,
            after=parse_time(after, "--after") if after else None,
            before=parse_time(before, "--before") if before else None)

    def history(self, entity: str) -> dict:
        """How the entity's snapshot changed, commit by commit."""
        from .read.entities import history

        return self._read(lambda scope: history(scope, entity))

    def status(self) -> dict[str, Any]:
        """The index's state: indexed commit, commits behind HEAD, the watcher and its overlay,
        the last update (docs/design.md §13)."""
        from .index.status import index_status

        return index_status(self.git, self.index_file)

    def sql(self, statement: str, *, timeout: float = 30.0, memory_limit: str = "1GB") -> tuple[list[str], list[tuple]]:
        """Run one read-only query; returns (column names, rows). It is interrupted after
        `timeout` seconds (QUERY_TIMEOUT) and may use `memory_limit` (QUERY_MEMORY_LIMIT)."""
        from .read.sql import check_limits, run_sql

        if self.tenant:
            raise UsageError("`sql` reads every tenant's rows; it is not available to a tenant-bound caller",
                             parameter="--tenant")
        memory_limit = check_limits(timeout, memory_limit)
        return self._read(lambda con: run_sql(con, statement, timeout=timeout, memory_limit=memory_limit),
                          scoped=False, memory_limit=memory_limit)
