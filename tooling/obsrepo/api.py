"""The library facade: `Repository(path)`. The CLI and the MCP server both call it.

    from obsrepo import Repository
    repo = Repository(".", tenant={"org": "northwind"})
    repo.index()
    page = repo.query(QueryRequest(scopes=("task/42",)))
    rows = repo.sql("SELECT count(*) AS n FROM observations")
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from . import errors
from .errors import ObsrepoError, UsageError
from .gitstore import Git
from .read.query import QueryRequest


class Repository:
    def __init__(self, path: str = ".", *, index: str | None = None, tenant: dict[str, str] | None = None,
                 progress: Callable[[int, int], None] | None = None, overlay: bool = True,
                 max_classification: str | None = None, branch: str | None = None) -> None:
        """`progress(done, total)` is called while a missing or outdated index is built for a read.
        `overlay`: whether `query` shows a running watcher's uncommitted drafts (docs/design.md §13).
        `max_classification` is the caller's ceiling (docs/design.md §14): nothing above it is read.
        `branch`: the proposal branch of writes that name none (default obsrepo/proposals)."""
        git = Git.at(path)
        self.git = git
        self.root = git.root
        from .index.paths import index_path

        self.index_file = index_path(self.root, index)
        self.tenant = dict(tenant or {})
        self.progress = progress
        self._states: Any = None  # the write path's rule state, moved along with the proposal branch
        self._live: Any = None  # a LiveIndex once `keep_open` was called
        self.overlay = overlay
        self.max_classification = _ceiling(max_classification, None)
        if branch is not None and not git.valid_branch_name(branch):
            raise UsageError(f"'{branch}' is not a valid branch name", parameter="--branch")
        self.branch = branch
        self._writing = threading.RLock()  # one write at a time per process: the rule state is shared

    def keep_open(self) -> None:
        """Serve many reads from one long-running process (the MCP server): keep a read-only
        connection to the index open between reads. Before each read the index is still brought
        to HEAD (in this process) when HEAD moved, so no read answers from a stale commit. Reads
        may then run on several threads at once. `close` ends it. (`sql` sets limits of its own
        on a connection: it is not for a repository kept open.)"""
        from .index import IndexFiles
        from .index.live import LiveIndex

        if self._live is None:
            self._live = LiveIndex(self.git, IndexFiles(self.index_file), progress=self.progress)

    def close(self) -> None:
        """Close the connection `keep_open` keeps (reads still work: they open their own)."""
        if self._live is not None:
            self._live.close()
            self._live = None

    # -- the gate and the work tree -----------------------------------------------------
    def check(self, paths: tuple[str, ...] = (), *, base: str | None = None, staged: bool = False,
              cwd: str | None = None, progress: Callable[[int, int], None] | None = None) -> Any:
        """`obsrepo check`: every document, the repository rules and, with `base` or `staged`,
        immutability commit by commit. PATHS are relative to `cwd` (default the root). Returns
        a `Report` (`.ok`, `.issues`)."""
        from .gate.check import CheckRequest, run_check

        return run_check(CheckRequest(cwd or self.root, tuple(paths), base, staged, progress=progress))

    # -- index -------------------------------------------------------------------------
    def index(self, rev: str | None = None, *, full: bool = False, strict: bool = False,
              progress: Callable[[int, int], None] | None = None) -> Any:
        """Build or update the index to REV (default HEAD); returns a BuildResult.
        With `strict`, invalid documents in history leave the previous index published."""
        from .index import IndexFiles, build_index

        target = self.git.resolve("HEAD" if rev is None else rev, "--rev")
        return build_index(self.git, IndexFiles(self.index_file), target, full=full, progress=progress, strict=strict)

    def _reader(self, follow_head: bool = True, **settings: Any) -> Any:
        """`follow_head=False`: the index as it is (built at HEAD only when missing or damaged)."""
        if self._live is not None and follow_head and not any(v for k, v in settings.items() if k != "overlay"):
            return self._live.lease()  # with a running watcher's overlay attached: the scope decides
        from .index import IndexFiles, reader_at_least
        from .index.freshness import wait_for_watcher
        from .index.watch_lock import watcher_pid

        files = IndexFiles(self.index_file)
        head = self.git.resolve("HEAD")  # GIT_ERROR when the repository has no commits yet
        if not follow_head:
            return reader_at_least(self.git, files, None, progress=self.progress, **settings)
        if watcher_pid(self.index_file) is not None:  # read your own commit (§8a): the watcher's update first
            con = reader_at_least(self.git, files, None, progress=self.progress, **settings)
            if con.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()[0] == head:
                return con
            con.close()
            wait_for_watcher(self.index_file, head)
        return reader_at_least(self.git, files, head, progress=self.progress, **settings)

    def _read(self, work: Callable[[Any], Any], at: str | None = None, tenant: dict[str, str] | None = None,
              scoped: bool = True, overlay: bool = False, ceiling: str | None = None, include_expired: bool = False,
              **settings: Any) -> Any:
        """Run `work(scope)` over a read scope of commit `at` (default: the indexed tip) and the
        caller's binding (or `tenant`, a narrower one); `scoped=False` hands `work` the bare
        connection instead. If DuckDB reports a damaged file on the way (a bad block checksum,
        a missing table), rebuild the index from git and run it once more."""
        from .index import IndexFiles, build_index
        from .index.engine import damage_errors
        from .read.scope import ReadScope

        at_sha = self.git.resolve(at, "--at") if at is not None else None
        for attempt in (1, 2):
            con = self._reader(overlay=overlay and at_sha is None, **settings)
            try:
                if not scoped:
                    return work(con)
                scope = ReadScope(con, self.git, at_sha, self.tenant if tenant is None else tenant, overlay=overlay,
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
            if self._live is not None:  # it holds the path open: it closes, rebuilds and reopens
                self._live.rebuild()
            else:
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
                        "at_commit": self.git.resolve(at, "--at") if at is not None else None}
            binding[key] = value
        drafts = self.overlay if overlay is None else overlay
        return self._read(lambda scope: run_query(scope, request), at, binding, overlay=drafts,
                          ceiling=request.max_classification, include_expired=request.include_expired)

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

    # -- review ------------------------------------------------------------------------
    def diff(self, base: str | None = None, head: str | None = None, *, check: bool = True) -> dict[str, Any]:
        """What BASE..HEAD changes in the truth (docs/design.md §12). HEAD defaults to HEAD,
        BASE to its merge base with the default branch; either may be any commit. The index is
        used as it is: commits off its chain are read as overlays, so a pull request's head
        needs no checkout and no index update. `check=False` leaves out the check of the change."""
        from .read.diff import default_base, review
        from .read.scope import ReadScope

        head_sha = self.git.resolve("HEAD" if head is None else head, "HEAD")
        base_sha = self.git.resolve(base, "BASE") if base is not None else default_base(self.git, head_sha)

        def work(con: Any) -> dict[str, Any]:
            scopes = [ReadScope(con, self.git, base_sha, self.tenant), ReadScope(con, self.git, head_sha, self.tenant)]
            try:
                if self.tenant and check:  # the check sees every tenant's documents; the report is filtered
                    scopes.append(ReadScope(con, self.git, head_sha, {}))
                return review(scopes[0], scopes[1], scopes[-1] if check else None)
            finally:
                for scope in scopes:
                    scope.close()

        return self._read(work, scoped=False, follow_head=False)

    def show(self, observation_id: str, *, at: str | None = None) -> dict[str, Any]:
        """One observation for a reviewer: front matter, body, the commit that added it, what it
        corrects or retracts, who retracts it, and the fields of its entity it currently wins."""
        from .read.show import show

        return self._read(lambda scope: show(scope, observation_id), at)

    # -- writing (docs/design.md §11) --------------------------------------------------------
    def new(self, front: dict[str, Any], body: str = "") -> dict[str, Any]:
        """Write one new observation into the work tree (as `obsrepo new`): {"id", "path", "content_hash"}."""
        from .write.new import create
        from .write.statements import stamp_tenant

        return create(self.git, stamp_tenant(front, self.tenant), body, binding=self.tenant).as_dict()

    def propose(self, front: dict[str, Any], body: str = "", *, branch: str | None = None,
                tool: str = "propose") -> dict[str, Any]:
        """Write one new observation as one new commit on the proposal branch (`branch`, else the
        repository's, else obsrepo/proposals; made from HEAD when missing), checked as `check
        --base` would check the branch; the work tree and the checked-out branch stay as they
        are. Returns {"id", "path", "content_hash", "commit", "branch"}. Writes of one process
        (the MCP server's threads) run one at a time; other processes race through the branch's
        compare-and-swap update."""
        from .write.proposal import propose
        from .write.statements import stamp_tenant

        front = stamp_tenant(front, self.tenant)
        with self._writing:
            return propose(self.git, self._tree_states(), front, body, branch=branch or self.branch, tool=tool).as_dict()

    def correct(self, entity: str, field: str, value: Any, *, reason: str, branch: str | None = None,
                commit: bool = True, source: str | None = None, allow_type_change: bool = False) -> dict[str, Any]:
        """Correct the current value of FIELD: a priority-1000 observation that `corrects` the
        winning observation. The winner is read at the proposal branch's tip when it exists
        (earlier proposals count), else at HEAD; with commit=False (the work tree) at HEAD.
        A value of another JSON type than the current one is refused (rule `type-change`)
        unless `allow_type_change`."""
        from .write.statements import correction, refuse_type_change, target_tenant

        with self._writing:
            at = self._statement_base(branch, commit)
            found = self.provenance(entity, field, at=at)
            if not allow_type_change:
                refuse_type_change(entity, field, found["value"], value)
            winner = found["observation_id"]
            winner = winner[0] if isinstance(winner, list) else winner
            documents = self._documents(at, commit)
            tenant = target_tenant(documents, winner, self.tenant)
            front = correction(entity, field, value, winner, tenant, reason=reason, source=source or self._source(),
                               winner_timestamp=documents.by_id[winner].get("timestamp"))
            return self._write(front, branch, commit, "correct")

    def retract(self, obs_id: str, *, reason: str, branch: str | None = None, commit: bool = True,
                source: str | None = None) -> dict[str, Any]:
        """Withdraw an observation from queries and snapshots: a new observation that `retracts` it."""
        from .write.statements import retraction, target_tenant

        with self._writing:
            at = self._statement_base(branch, commit)
            tenant = target_tenant(self._documents(at, commit), obs_id, self.tenant)
            return self._write(retraction(obs_id, tenant, reason=reason, source=source or self._source()),
                               branch, commit, "retract")

    def relate(self, source_entity: str, relation_type: str, target: str, *, branch: str | None = None,
               commit: bool = True, source: str | None = None) -> dict[str, Any]:
        """A relation SOURCE —TYPE→ TARGET (PART_OF, DEPENDS_ON, REFERS_TO, … or your own UPPER_SNAKE)."""
        from .write.statements import relation

        front = relation(source_entity, relation_type, target, source=source or self._source())
        return self._write(front, branch, commit, "relate")

    def merge(self, from_entity: str, into_entity: str, *, reason: str, branch: str | None = None,
              commit: bool = True, source: str | None = None) -> dict[str, Any]:
        """Merge FROM into INTO (DUPLICATE_OF): FROM's observations count for INTO from then on."""
        from .write.statements import merge

        front = merge(from_entity, into_entity, reason=reason, source=source or self._source())
        return self._write(front, branch, commit, "merge")

    def _write(self, front: dict[str, Any], branch: str | None, commit: bool, tool: str, body: str = "") -> dict[str, Any]:
        if commit:
            return self.propose(front, body, branch=branch, tool=tool)
        if branch is not None:
            raise UsageError("--branch names the proposal branch of --commit", parameter="--branch")
        return self.new(front, body)

    def _tree_states(self) -> Any:
        if self._states is None:
            from .write.proposal import TreeStates

            self._states = TreeStates(self.git, self.tenant)
        return self._states

    def _statement_base(self, branch: str | None, commit: bool) -> str:
        """The commit a statement is made against: the proposal branch's tip, else HEAD."""
        from .write.proposal import DEFAULT_BRANCH

        if commit:
            tip, _ = self.git.branch_tip(branch or self.branch or DEFAULT_BRANCH)
            if tip:
                return tip
        return self.git.resolve("HEAD")

    def _targets(self, branch: str | None, commit: bool) -> Any:
        """The documents a statement may name: the proposal branch's tip (else HEAD) with
        `commit`, else the work tree's."""
        return self._documents(self._statement_base(branch, commit) if commit else "", commit)

    def _documents(self, at: str, commit: bool) -> Any:
        """The rule state of the documents a statement may name: the commit's tree, or, for the
        work tree, every document in it, committed or not; a bound writer's, the documents its
        tenant can see (docs/design.md §8a)."""
        if commit:
            return self._tree_states().at(at)
        from .gate.addition import RuleState
        from .gate.cache import AnalysisCache
        from .gate.check import analyze_source
        from .gate.sources import worktree

        cache = AnalysisCache.open(self.git)
        analyses = analyze_source(worktree(self.root), cache)
        cache.save()
        return RuleState.of(analyses, self.tenant)

    def _source(self) -> str:
        from .write.proposal import default_source

        return default_source(self.git)

    # -- checks ----------------------------------------------------------------------------
    def check_document(self, text: str) -> dict[str, Any]:
        """`check`'s JSON report for one whole document's text, as if it were added at HEAD: the
        per-document rules and the repository rules with the documents of HEAD. Nothing is
        written. A tenant-bound caller's document is checked against its tenant's documents
        only (the report never hints at another tenant's)."""
        from .gate.document import check_text

        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError("the document is not valid Unicode text", parameter="text") from None
        head = self.git.resolve("HEAD") if self.git.has_head() else None
        return check_text(self.git, head, data, self.tenant).as_dict()

    # -- stewardship and beliefs (docs/design.md §14) ------------------------------------
    def feedback(self, target: str, outcome: str, *, session: str | None = None, source: str | None = None,
                 timestamp: str | None = None, branch: str | None = None, commit: bool = True) -> dict[str, Any]:
        """Feedback on observation `target` (accepted, rejected, rework, misleading): a new
        observation the index folds into the target's weight, in the writer's tenant (else the
        target's). One commit on the proposal branch, the target looked up at its tip (HEAD when
        it does not exist yet); with commit=False written into the work tree, the target looked
        up among the work tree's documents."""
        from .write.statements import feedback

        front = feedback(self._targets(branch, commit), target, outcome, self.tenant, session=session,
                         source=source or self._source(), timestamp=timestamp)
        return self._write(front, branch, commit, "feedback")

    def reclassify(self, targets: list[str], classification: str, *, source: str | None = None,
                   reason: str | None = None, branch: str | None = None, commit: bool = True) -> dict[str, Any]:
        """A reclassify observation raising `targets` (one tenant's) to `classification`; `reason`
        is its body. The proposal branch or, with commit=False, the work tree (as `feedback`)."""
        from .write.statements import reclassification

        front = reclassification(self._targets(branch, commit), list(targets), classification, self.tenant,
                                 source=source or self._source())
        return self._write(front, branch, commit, "reclassify", reason or "")

    def comprehend(self, comp_id: str, observation: str, effect: str, *, statement: str | None = None,
                   reasoning: str | None = None, branch: str | None = None, commit: bool = True) -> dict[str, Any]:
        """The next version of a comprehension document after `observation` (confirm, contradict,
        neutral): {"id", "path", "version", "previous_confidence", "confidence", "changed"};
        `changed` is False when the observation was already cited (nothing written). The version
        at the proposal branch's tip is updated in one commit there (the answer adds "commit",
        None when nothing changed, and "branch"); with commit=False, the work tree's file."""
        from .write.comprehend import Belief, comprehend, comprehend_commit

        belief = Belief(comp_id, observation, effect, statement, reasoning)
        if commit:
            with self._writing:
                return comprehend_commit(self.git, self._tree_states(), belief, tenant=self.tenant,
                                         branch=branch or self.branch)
        if branch is not None:
            raise UsageError("--branch names the proposal branch of --commit", parameter="--branch")
        belief.check()
        return comprehend(self.root, self._targets(None, False), belief, tenant=self.tenant).as_dict()

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
    """`Repository.new` in the repository that contains `path`, without building a Repository:
    a `Created`. Outside a git repository it is GIT_ERROR and nothing is written (docs/design.md
    §8a), like every other command."""
    from .write.new import create
    from .write.statements import stamp_tenant

    return create(Git.at(path), stamp_tenant(front, tenant or {}), body, binding=tenant)
