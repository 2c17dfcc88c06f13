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

from . import errors
from .errors import GitError, ObsrepoError, UsageError
from .gitstore import Git
from .read.query import QueryRequest


class Repository:
    def __init__(self, path: str = ".", *, index: str | None = None, tenant: dict[str, str] | None = None,
                 progress: Callable[[int, int], None] | None = None, max_classification: str | None = None) -> None:
        """`progress(done, total)` is called while a missing or outdated index is built for a read;
        `max_classification` is the caller's ceiling (docs/design.md §14): nothing above it is read."""
        git = Git.discover(path)
        if git is None:
            where = os.path.abspath(path)
            raise GitError(f"{where} is not inside a git repository; obsrepo works on a git repository "
                           "(run it from inside one)", cwd=where)
        self.git = git
        self.root = git.root
        from .index.store import index_path

        self.index_file = index_path(self.root, index)
        self.tenant = dict(tenant or {})
        self.progress = progress
        self.max_classification = _ceiling(max_classification, None)

    # -- the gate and the work tree -----------------------------------------------------
    def check(self, paths: tuple[str, ...] = (), *, base: str | None = None, staged: bool = False,
              cwd: str | None = None, progress: Callable[[int, int], None] | None = None) -> Any:
        """`obsrepo check`: every document, the repository rules and, with `base` or `staged`,
        immutability commit by commit. PATHS are relative to `cwd` (default the root). Returns
        a `Report` (`.ok`, `.issues`)."""
        from .gate.check import CheckRequest, run_check

        return run_check(CheckRequest(cwd or self.root, tuple(paths), base, staged, progress=progress))

    def new(self, front: dict[str, Any], body: str = "") -> Any:
        """`obsrepo new`: one new observation file in the work tree, validated as `check` would;
        returns `Created` (`.id`, `.path`, `.content_hash`)."""
        return new_observation(self.root, front, body, tenant=self.tenant)

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

        head = self.git.resolve("HEAD")  # GIT_ERROR when the repository has no commits yet
        return reader_at_least(self.git, IndexFiles(self.index_file), head, progress=self.progress, **settings)

    def _read(self, work: Callable[[Any], Any], at: str | None = None, tenant: dict[str, str] | None = None,
              scoped: bool = True, ceiling: str | None = None, include_expired: bool = False, **settings: Any) -> Any:
        """Run `work(scope)` over a read scope of commit `at` (default: the indexed tip) and the
        caller's binding (or `tenant`, a narrower one); `scoped=False` hands `work` the bare
        connection instead. If DuckDB reports a damaged file on the way (a bad block checksum,
        a missing table), rebuild the index from git and run it once more."""
        from .index import IndexFiles, build_index
        from .index.store import damage_errors
        from .read.scope import ReadScope

        at_sha = self.git.resolve(at, "--at") if at else None
        for attempt in (1, 2):
            con = self._reader(**settings)
            try:
                if not scoped:
                    return work(con)
                scope = ReadScope(con, self.git, at_sha, self.tenant if tenant is None else tenant,
                                  ceiling=_ceiling(self.max_classification, ceiling), include_expired=include_expired)
                try:
                    return work(scope)
                finally:
                    scope.close()
            except damage_errors() as exc:
                if attempt == 2:
                    from .errors import IndexFault

                    raise IndexFault(f"the index is damaged and rebuilding did not help: {exc}") from None
            except _duckdb_error() as exc:  # any other DuckDB failure leaves the library as one of ours
                raise ObsrepoError(f"the index could not answer: {type(exc).__name__}: {exc}",
                                   code=errors.INTERNAL_ERROR, duckdb=type(exc).__name__) from exc
            finally:
                con.close()
            build_index(self.git, IndexFiles(self.index_file), self.git.resolve("HEAD"), full=True)
        raise AssertionError("unreachable")

    # -- queries -----------------------------------------------------------------------
    def query(self, request: QueryRequest, at: str | None = None, where: dict[str, str] | None = None) -> dict[str, Any]:
        """Scoped observations. `where` narrows by tenant keys (--org/--project/…) inside the
        caller's binding; it can never widen it."""
        from .read.query import run_query

        request.validate()
        binding = dict(self.tenant)
        for key, value in (where or {}).items():
            if key in binding and binding[key] != value:
                return {"observations": [], "total": 0, "limit": request.limit, "offset": request.offset,
                        "at_commit": self.git.resolve(at, "--at") if at else None}
            binding[key] = value
        return self._read(lambda scope: run_query(scope, request), at, binding, ceiling=request.max_classification,
                          include_expired=request.include_expired)

    def snapshot(self, entity: str, *, at: str | None = None, as_of: str | None = None,
                 explain: bool = False, max_classification: str | None = None, include_expired: bool = False) -> dict[str, Any]:
        """The entity's snapshot (docs/design.md §4 shape) at commit `at`, as of valid time `as_of`."""
        from .read.snapshots import parse_as_of, snapshot

        moment = parse_as_of(as_of) if as_of else None
        return self._read(lambda scope: snapshot(scope, entity, as_of=moment, explain=explain), at,
                          ceiling=max_classification, include_expired=include_expired)

    def provenance(self, entity: str, field: str, *, at: str | None = None, max_classification: str | None = None,
                   include_expired: bool = False) -> dict[str, Any]:
        """Field → winning observation → file, commit, author, source_ref, interpretation."""
        from .read.snapshots import provenance

        return self._read(lambda scope: provenance(scope, entity, field), at, ceiling=max_classification,
                          include_expired=include_expired)

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
                 before: str | None = None, limit: int = 1000, offset: int = 0, at: str | None = None,
                 max_classification: str | None = None) -> dict:
        from .read.entities import timeline
        from .times import parse_time

        low = parse_time(after, "--after") if after else None
        high = parse_time(before, "--before") if before else None
        return self._read(lambda scope: timeline(scope, entity=entity, event_type=event_type, limit=limit, offset=offset,
                                                 after=low, before=high), at, ceiling=max_classification)

    def history(self, entity: str) -> dict:
        """How the entity's snapshot changed, commit by commit."""
        from .read.entities import history

        return self._read(lambda scope: history(scope, entity))

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

    # -- stewardship and beliefs (docs/design.md §14) ------------------------------------
    def feedback(self, target: str, outcome: str, *, session: str | None = None, source: str | None = None,
                 timestamp: str | None = None) -> Any:
        """A feedback observation on `target` (accepted, rejected, rework, misleading) in the work
        tree; returns `Created`. The index folds it into the target's weight."""
        from .write.steward import DEFAULT_SOURCE, feedback

        return feedback(self.root, target, outcome, session=session, source=source or DEFAULT_SOURCE,
                        tenant=self.tenant, timestamp=timestamp)

    def reclassify(self, targets: list[str], classification: str, *, source: str | None = None,
                   reason: str | None = None) -> Any:
        """A reclassify observation raising `targets` to `classification`; returns `Created`."""
        from .write.steward import DEFAULT_SOURCE, reclassify

        return reclassify(self.root, list(targets), classification, source=source or DEFAULT_SOURCE,
                          tenant=self.tenant, reason=reason)

    def comprehend(self, comp_id: str, observation: str, effect: str, *, statement: str | None = None,
                   reasoning: str | None = None) -> Any:
        """The next version of a comprehension document after `observation` (confirm, contradict,
        neutral); returns `Updated` (`changed` is False when it was already cited)."""
        from .write.comprehend import comprehend

        return comprehend(self.root, comp_id, observation, effect, statement=statement, reasoning=reasoning,
                          tenant=self.tenant)

    def comprehensions(self, *, domain: str | None = None, confidence: str | None = None, text: str | None = None,
                       limit: int = 50, offset: int = 0) -> dict[str, Any]:
        """The beliefs of the indexed commit, by id."""
        from .read.comprehensions import comprehensions

        return self._read(lambda scope: comprehensions(scope, domain, confidence, text, limit, offset))

    def retention(self, *, at: str | None = None, limit: int = 50) -> dict[str, Any]:
        """What the retention policies expired at commit `at` (default the tip), and what expires next."""
        from .read.retention import retention

        return self._read(lambda scope: retention(scope, limit), at, include_expired=True)

    def export(self, request: QueryRequest, fmt: str, output: str | None = None, *, at: str | None = None,
               where: dict[str, str] | None = None, out: Any = None,
               progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Every observation `query` would match for `request` (paging aside), written to `output`
        or the binary stream `out`; returns {"format", "output", "count"}."""
        from .read.export import export

        binding = dict(self.tenant)
        for key, value in (where or {}).items():
            if key in binding and binding[key] != value:
                binding[key] = " "  # outside the binding: nothing matches (no tenant value holds a space)
            else:
                binding[key] = value
        # the statements are ours (no caller's SQL): the connection may write files
        return self._read(lambda scope: export(scope, request, fmt, output, out=out, progress=progress), at, binding,
                          ceiling=request.max_classification, include_expired=request.include_expired, sandbox=False)


def _ceiling(*levels: str | None) -> str | None:
    """The most restrictive of the ceilings given (None: no ceiling)."""
    from .format.vocabulary import CLASSIFICATION_RANK

    for level in levels:
        if level is not None and level not in CLASSIFICATION_RANK:
            raise UsageError("--max-classification is public, internal, confidential or restricted",
                             parameter="--max-classification")
    given = [level for level in levels if level is not None]
    return min(given, key=CLASSIFICATION_RANK.__getitem__) if given else None


def _duckdb_error() -> type[BaseException]:
    import duckdb

    return duckdb.Error


def new_observation(path: str, front: dict[str, Any], body: str = "", *, tenant: dict[str, str] | None = None) -> Any:
    """`Repository.new` for any folder, a git repository or not (its root when it is one)."""
    from .write.new import create

    git = Git.discover(path)
    return create(git.root if git else path, _stamped(front, tenant) if tenant else front, body)


def _stamped(front: dict[str, Any], tenant: dict[str, str]) -> dict[str, Any]:
    """A bound caller writes within its binding: the tenant is stamped, a different one refused."""
    given = front.get("tenant")
    if given is None:
        return {**front, "tenant": dict(tenant)}
    if not isinstance(given, dict) or any(given.get(key, value) != value for key, value in tenant.items()):
        raise UsageError("the observation's tenant lies outside the caller's binding", parameter="tenant")
    return {**front, "tenant": {**given, **tenant}}
