"""The library facade: `Repository(path)`, a small typed convenience over the door (`ops/`).

    from obsrepo import Repository
    repo = Repository(".", tenant={"org": "northwind"})
    repo.index()
    page = repo.query(QueryRequest(scopes=("task/42",)))
    rows = repo.sql("SELECT count(*) AS n FROM observations")

Each method builds one request and runs its operation over the repository's `Session`; the
adapters (CLI, MCP, the watcher) use `ops` directly. Errors name the request's fields (`at`,
`limit`), as every operation's do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import ops
from .ops import Binding, Ceiling, ProposalBranch, Session, WorkTree, run
from .read.query import QueryRequest

Progress = Callable[[int, int], None]


def _destination(commit: bool, branch: str | None) -> ops.Destination:
    return ops.destination(commit, branch)


class Repository:
    def __init__(self, path: str = ".", *, index: str | None = None, tenant: dict[str, str] | None = None,
                 progress: Progress | None = None, overlay: bool = True,
                 max_classification: str | None = None, branch: str | None = None, embedder: str | None = None) -> None:
        """`progress(done, total)` is called while a missing or outdated index is built for a read.
        `overlay`: whether `query` shows a running watcher's uncommitted drafts (docs/design.md §13).
        `max_classification` is the caller's ceiling (docs/design.md §14): nothing above it is read.
        `branch`: the proposal branch of writes that name none (default obsrepo/proposals).
        `embedder`: `provider:model` of recall (docs/design.md §15), else OBSREPO_EMBEDDER."""
        self.session = Session(path, index=index, binding=Binding.of(tenant),
                               ceiling=Ceiling.parse(max_classification, "max_classification"), branch=branch,
                               progress=progress, overlay=overlay, embedder=embedder)
        self.git = self.session.git
        self.root = self.session.root
        self.index_file = self.session.index_file
        self.tenant = dict(tenant or {})
        self.branch = branch

    def keep_open(self) -> None:
        """Serve many reads from one long-running process: keep the index open between reads
        (still brought to HEAD before each read when HEAD moved). `close` ends it."""
        self.session.keep_open()

    def close(self) -> None:
        self.session.close()

    def _tree_states(self) -> Any:
        return self.session.tree_states()

    # -- the gate and the index ------------------------------------------------------------
    def check(self, paths: tuple[str, ...] = (), *, base: str | None = None, staged: bool = False,
              cwd: str | None = None, progress: Progress | None = None) -> Any:
        """`obsrepo check`: returns a `Report` (`.ok`, `.issues`)."""
        return run(self.session, ops.Check(tuple(paths), base, staged, cwd, progress)).report

    def index(self, rev: str | None = None, *, full: bool = False, strict: bool = False,
              progress: Progress | None = None) -> Any:
        """Build or update the index to REV (default HEAD); returns a BuildResult."""
        return run(self.session, ops.Index(rev, full, strict, progress)).result

    def status(self) -> dict[str, Any]:
        return run(self.session, ops.Status()).to_json()

    def embedder_info(self, *texts: str) -> dict[str, Any]:
        """The configured embedder ({provider, fingerprint, dimension, vectors}) and the vectors of `texts`."""
        return run(self.session, ops.EmbedInfo(texts=texts)).to_json()

    def sql(self, statement: str, *, timeout: float = 30.0, memory_limit: str = "1GB") -> tuple[list[str], list[tuple]]:
        """Run one read-only query; returns (column names, rows)."""
        rows = run(self.session, ops.Sql(statement, timeout, memory_limit))
        return rows.columns, rows.rows

    # -- reads -----------------------------------------------------------------------------
    def query(self, request: QueryRequest, at: str | None = None, where: dict[str, str] | None = None,
              overlay: bool | None = None) -> dict[str, Any]:
        """Scoped observations. `where` narrows by tenant keys inside the caller's binding."""
        return run(self.session, _query(request, at, where, overlay)).to_json()

    def export(self, request: QueryRequest, fmt: str, output: str | None = None, *, at: str | None = None,
               where: dict[str, str] | None = None, out: Any = None, progress: Progress | None = None) -> dict[str, Any]:
        """Every observation `query` would match (paging aside): {"format", "output", "count"}."""
        return run(self.session, ops.Export(_query(request, at, where, None), fmt, output, out, progress)).to_json()

    def snapshot(self, entity: str, *, at: str | None = None, as_of: str | None = None, explain: bool = False,
                 max_classification: str | None = None, include_expired: bool = False) -> dict[str, Any]:
        return run(self.session, ops.Snapshot(entity, at, as_of, explain, max_classification, include_expired)).to_json()

    def provenance(self, entity: str, field: str, *, at: str | None = None, max_classification: str | None = None,
                   include_expired: bool = False) -> dict[str, Any]:
        return run(self.session, ops.Provenance(entity, field, at, max_classification, include_expired)).to_json()

    def entities(self, entity_type: str | None = None, *, limit: int = 50, offset: int = 0, at: str | None = None) -> dict:
        return run(self.session, ops.Entities(entity_type, limit, offset, at)).to_json()

    def find(self, identifier: str, entity_type: str | None = None, *, limit: int = 50, offset: int = 0,
             at: str | None = None) -> dict:
        return run(self.session, ops.Find(identifier, entity_type, limit, offset, at)).to_json()

    def observations(self, entity: str, *, limit: int = 50, offset: int = 0, at: str | None = None) -> dict:
        return run(self.session, ops.Observations(entity, limit, offset, at)).to_json()

    def relationships(self, entity: str, *, direction: str = "both", types: tuple[str, ...] = (),
                      at: str | None = None) -> dict:
        return run(self.session, ops.Relations(entity, direction, tuple(types), at)).to_json()

    def related(self, entity: str, *, types: tuple[str, ...] = (), direction: str = "both", hops: int = 1,
                at: str | None = None) -> dict:
        return run(self.session, ops.Related(entity, tuple(types), direction, hops, at)).to_json()

    def timeline(self, *, entity: str | None = None, event_type: str | None = None, after: str | None = None,
                 before: str | None = None, limit: int = 1000, offset: int = 0, at: str | None = None,
                 max_classification: str | None = None) -> dict:
        return run(self.session, ops.Timeline(entity, event_type, after, before, limit, offset, at,
                                              max_classification)).to_json()

    def history(self, entity: str) -> dict:
        return run(self.session, ops.History(entity)).to_json()

    def show(self, observation_id: str, *, at: str | None = None) -> dict[str, Any]:
        return run(self.session, ops.Show(observation_id, at)).to_json()

    def comprehensions(self, *, domain: str | None = None, confidence: str | None = None, text: str | None = None,
                       limit: int = 50, offset: int = 0) -> dict[str, Any]:
        return run(self.session, ops.Comprehensions(domain, confidence, text, limit, offset)).to_json()

    def retention(self, *, at: str | None = None, limit: int = 50) -> dict[str, Any]:
        return run(self.session, ops.Retention(at, limit)).to_json()

    # -- review ------------------------------------------------------------------------------
    def diff(self, base: str | None = None, head: str | None = None, *, check: bool = True) -> dict[str, Any]:
        """What BASE..HEAD changes in the truth (docs/design.md §12)."""
        return run(self.session, ops.Diff(base, head, check)).to_json()

    def check_document(self, text: str) -> dict[str, Any]:
        """`check`'s JSON report for one whole document's text, as if it were added at HEAD."""
        return run(self.session, ops.CheckDocument(text)).to_json()

    # -- writes (docs/design.md §11) -------------------------------------------------------------
    def new(self, front: dict[str, Any], body: str = "") -> dict[str, Any]:
        """Write one new observation into the work tree: {"id", "path", "content_hash"}."""
        return run(self.session, ops.New(front, body, WorkTree())).to_json()

    def propose(self, front: dict[str, Any], body: str = "", *, branch: str | None = None,
                tool: str = "propose") -> dict[str, Any]:
        """One new observation as one new commit on the proposal branch."""
        return run(self.session, ops.New(front, body, ProposalBranch(branch), tool)).to_json()

    def correct(self, entity: str, field: str, value: Any, *, reason: str, branch: str | None = None,
                commit: bool = True, source: str | None = None, allow_type_change: bool = False) -> dict[str, Any]:
        return run(self.session, ops.Correct(entity, field, value, reason, source, allow_type_change,
                                             _destination(commit, branch))).to_json()

    def retract(self, obs_id: str, *, reason: str, branch: str | None = None, commit: bool = True,
                source: str | None = None) -> dict[str, Any]:
        return run(self.session, ops.Retract(obs_id, reason, source, _destination(commit, branch))).to_json()

    def relate(self, source_entity: str, relation_type: str, target: str, *, branch: str | None = None,
               commit: bool = True, source: str | None = None) -> dict[str, Any]:
        return run(self.session, ops.Relate(source_entity, relation_type, target, source,
                                            _destination(commit, branch))).to_json()

    def merge(self, from_entity: str, into_entity: str, *, reason: str, branch: str | None = None,
              commit: bool = True, source: str | None = None) -> dict[str, Any]:
        return run(self.session, ops.Merge(from_entity, into_entity, reason, source, _destination(commit, branch))).to_json()

    def feedback(self, target: str, outcome: str, *, session: str | None = None, source: str | None = None,
                 timestamp: str | None = None, branch: str | None = None, commit: bool = True) -> dict[str, Any]:
        return run(self.session, ops.Feedback(target, outcome, session, source, timestamp,
                                              _destination(commit, branch))).to_json()

    def reclassify(self, targets: list[str], classification: str, *, source: str | None = None,
                   reason: str | None = None, branch: str | None = None, commit: bool = True) -> dict[str, Any]:
        return run(self.session, ops.Reclassify(tuple(targets), classification, reason, source,
                                                _destination(commit, branch))).to_json()

    def comprehend(self, comp_id: str, observation: str, effect: str, *, statement: str | None = None,
                   reasoning: str | None = None, branch: str | None = None, commit: bool = True) -> dict[str, Any]:
        return run(self.session, ops.Comprehend(comp_id, observation, effect, statement, reasoning,
                                                _destination(commit, branch))).to_json()


def _query(request: QueryRequest, at: str | None, where: dict[str, str] | None, overlay: bool | None) -> ops.Query:
    where = where or {}
    return ops.Query(scopes=tuple(request.scopes), type=request.type, source=request.source, after=request.after,
                     before=request.before, entity=request.entity, text=request.text,
                     max_classification=request.max_classification, include_retracted=request.include_retracted,
                     include_expired=request.include_expired, unweighted=request.unweighted, limit=request.limit,
                     offset=request.offset, order=request.order, at=at, org=where.get("org"),
                     project=where.get("project"), agent=where.get("agent"), user=where.get("user"), overlay=overlay)


def new_observation(path: str, front: dict[str, Any], body: str = "", *, tenant: dict[str, str] | None = None) -> Any:
    """`Repository.new` in the repository that contains `path`: a `Created`. Outside a git
    repository it is GIT_ERROR and nothing is written (docs/design.md §8a)."""
    from .gitstore import Git
    from .write.new import create
    from .write.statements import stamp_tenant

    return create(Git.at(path), stamp_tenant(front, tenant or {}), body, binding=tenant)
