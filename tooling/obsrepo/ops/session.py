"""The Session: one caller's hold on one repository, made once and handed to every operation.

It holds git (discovered once), the caller's binding and ceiling, the index file, the proposal
branch of writes that name none, and, for a long-running caller (the MCP server, the web
view), the index kept open between requests. Reads go through `read`, the one loop that
brings the index to HEAD first (read your own commit, docs/design.md §8a) and rebuilds it from
git once when DuckDB reports it damaged. Writes of one process run one at a time (`writing`):
the write path's rule state is shared.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from .. import errors
from ..errors import IndexFault, ObsrepoError, UsageError
from ..gitstore import Git
from .values import NO_CEILING, UNBOUND, Binding, Ceiling, ProposalBranch, Rev

T = TypeVar("T")
_UNLOADED = object()
Progress = Callable[[int, int], None]
KNOWN_COMMITS = 4096  # full shas a session remembers as commits (a server is asked for a few)


class Session:
    def __init__(self, path: str = ".", *, index: str | None = None, binding: Binding = UNBOUND,
                 ceiling: Ceiling = NO_CEILING, branch: str | None = None, progress: Progress | None = None,
                 overlay: bool = True, embedder: str | None = None) -> None:
        """`progress(done, total)` is called while a missing or outdated index is built for a read.
        `embedder`: `provider:model` (docs/design.md §15), else OBSREPO_EMBEDDER; loaded when
        first used, so a command that embeds nothing never loads a model.
        `overlay`: whether reads show a running watcher's uncommitted drafts (docs/design.md §13).
        `ceiling`: nothing above it is read (§14). `branch`: the proposal branch of writes that
        name none (default obsrepo/proposals)."""
        from ..index.paths import index_path

        self.git = Git.at(path)
        self.root = self.git.root
        self.index_file = index_path(self.root, index)
        self.binding = binding
        self.ceiling = ceiling
        self.progress = progress
        self.overlay = overlay
        if branch is not None and not self.git.valid_branch_name(branch):
            raise UsageError(f"branch '{branch}' is not a valid branch name", parameter="branch")
        self.branch = branch
        self.writing = threading.RLock()  # one write at a time per process: the rule state is shared
        self._states: Any = None  # the write path's rule state, moved along with the proposal branch
        self._live: Any = None  # a LiveIndex once `keep_open` was called
        self._embedder_spec = embedder
        self._embedder: Any = _UNLOADED
        self._vectors: Any = None
        self._together = threading.local()  # `block`: a `together` block's scopes, per thread
        self._commits: set[str] = set()  # full shas known to name commits

    # -- revisions -----------------------------------------------------------------------
    def rev(self, name: str, field: str) -> Rev:
        """`name` as one commit (§8a), errors naming `field`. A full sha that named a commit
        names it for good: asked again (every page of a preview is read at its HEAD), it costs
        no `git rev-parse`."""
        if name in self._commits:
            return Rev(name)
        rev = Rev.of(self.git, name, field)
        if rev.sha == name and len(self._commits) < KNOWN_COMMITS:
            self._commits.add(name)
        return rev

    def rev_or_head(self, name: str | None, field: str) -> Rev:
        return self.rev("HEAD" if name is None else name, field)

    def at(self, name: str | None, field: str = "at") -> Rev | None:
        """A read's commit: None (the tip served) when not given; anything given must resolve."""
        return None if name is None else self.rev(name, field)

    # -- recall ---------------------------------------------------------------------------
    def embedder(self) -> Any:
        """The configured embedder (an `embed.Embedder`), None when there is none; loaded once."""
        if self._embedder is _UNLOADED:
            from ..embed import configured

            self._embedder = configured(self._embedder_spec, "embedder")
        return self._embedder

    def vector_cache(self) -> Any:
        """The repository's vector cache of the configured embedder (an `embed.cache.VectorCache`),
        opened once: a long-running caller maps each segment once."""
        if self._vectors is None:
            from ..index.vectors import open_cache

            self._vectors = open_cache(self.git, self.embedder())
        return self._vectors

    # -- the index kept open ---------------------------------------------------------------
    def keep_open(self) -> None:
        """Serve many reads from one long-running process: keep a read-only connection to the
        index open between reads. Before each read the index is still brought to HEAD (in this
        process) when HEAD moved, so no read answers from a stale commit. Reads may then run on
        several threads at once. `close` ends it."""
        from ..index import IndexFiles
        from ..index.live import LiveIndex

        if self._live is None:
            self._live = LiveIndex(self.git, IndexFiles(self.index_file), progress=self.progress, embedder=self.embedder)

    def close(self) -> None:
        if self._live is not None:
            self._live.close()
            self._live = None

    def build(self, target: Rev, *, full: bool = False, strict: bool = False, progress: Progress | None = None) -> Any:
        from ..index import IndexFiles, build_index

        return build_index(self.git, IndexFiles(self.index_file), target.sha, full=full, progress=progress, strict=strict,
                           embedder=self.embedder)

    def _reader(self, follow_head: bool = True, stems: bool = True, **settings: Any) -> Any:
        """A connection to the index at HEAD (read your own commit); `follow_head=False`: the
        index as it is (built at HEAD only when missing or damaged). `stems=False`: without
        DuckDB's fts extension (a kept-open connection has it anyway)."""
        if self._live is not None and not any(v for k, v in settings.items() if k != "overlay"):
            # with a running watcher's overlay attached: the scope decides. A read that does not
            # follow HEAD (a review) takes it too: a second connection of this process could not
            # open the file with other settings while the kept one holds it.
            return self._live.lease()
        from ..index import IndexFiles, reader_at_least
        from ..index.freshness import wait_for_watcher
        from ..index.watch_lock import watcher_pid

        files = IndexFiles(self.index_file)
        head = self.git.resolve("HEAD")  # GIT_ERROR when the repository has no commits yet
        settings["fts"] = stems
        if not follow_head:
            return reader_at_least(self.git, files, None, progress=self.progress, **settings)
        if watcher_pid(self.index_file) is not None:  # read your own commit (§8a): the watcher's update first
            con = reader_at_least(self.git, files, None, progress=self.progress, **settings)
            if con.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()[0] == head:
                return con
            con.close()
            wait_for_watcher(self.index_file, head)
        return reader_at_least(self.git, files, head, progress=self.progress, embedder=self.embedder, **settings)

    def read(self, work: Callable[[Any], T], at: Rev | None = None, binding: Binding | None = None, *,
             scoped: bool = True, overlay: bool = False, ceiling: Ceiling = NO_CEILING, include_expired: bool = False,
             follow_head: bool = True, stems: bool = True, **settings: Any) -> T:
        """Run `work(scope)` over a read scope of commit `at` (default: the indexed tip) and the
        session's binding (or `binding`, a narrower one); `scoped=False` hands `work` the bare
        connection instead. `stems=False` for a read that stems no words (no text searched, no
        commit off the chain to patch in): a command's fresh connection then does without
        DuckDB's fts extension, ~40 ms of CPU to load. Inside `together`, a scoped read that follows HEAD takes the block's
        scope of the same commit, binding, ceiling and retention. If DuckDB reports a damaged
        file on the way (a bad block checksum, a missing table), rebuild the index from git and
        run it once more."""
        from ..index.engine import damage_errors, query_mistake

        key = (None if at is None else at.sha, tuple(sorted((self.binding if binding is None else binding).as_dict().items())),
               overlay, self.ceiling.under(ceiling).level, include_expired)
        block: _Block | None = getattr(self._together, "block", None)
        sharing = block is not None and scoped and follow_head and not settings
        for attempt in (1, 2):
            # in a block, the watcher's drafts are attached whenever there are any: a scope reads them only when asked
            con = (block.connection(lambda: self._reader(True, overlay=True)) if block is not None and sharing
                   else self._reader(follow_head, stems, overlay=overlay and at is None, **settings))
            try:
                if not scoped:
                    return work(con)
                if block is not None and sharing:
                    return work(block.scope(key, self._scope))
                if self._live is not None and hasattr(con, "keep"):  # a kept-open generation keeps its scopes
                    return self._kept_scope(con, key, work)
                scope = self._scope(con, key)
                try:
                    return work(scope)
                finally:
                    scope.close()
            except damage_errors() as exc:
                if attempt == 2:
                    raise IndexFault(f"the index is damaged and rebuilding did not help: {exc}") from None
                if query_mistake(exc, con):
                    raise _unanswered(exc) from exc  # the query's mistake: a rebuild would only hide it
            except _duckdb_error() as exc:  # any other DuckDB failure leaves the library as one of ours
                raise _unanswered(exc) from exc
            finally:
                if not sharing:
                    con.close()
            if block is not None:  # it read the damaged file: the block's next read opens the new one
                block.close()
            if self._live is not None:  # it holds the path open: it closes, rebuilds and reopens
                self._live.rebuild()
            else:
                self.build(self.rev("HEAD", "at"), full=True)
        raise AssertionError("unreachable")

    @contextmanager
    def together(self) -> Iterator[None]:
        """Answer the reads of this block (on this thread) over one connection, with one read
        scope per commit, binding, ceiling and retention, closed when the block ends: a page
        that asks several questions sets its scope up once (the views, an overlay read from
        `git diff`, the stewardship relation), and the scope keeps each entity's snapshot for
        every question after the first. What a read answers does not change, only its cost. A
        block inside a block is the outer one."""
        if getattr(self._together, "block", None) is not None:
            yield
            return
        self._together.block = _Block()
        try:
            yield
        finally:
            self._together.block.close()
            self._together.block = None

    def _kept_scope(self, lease: Any, key: tuple, work: Callable[[Any], T]) -> T:
        """`work` over a read scope the generation keeps between requests (index/live.py): given
        back only when the read left its views as it found them and raised nothing."""
        scope = lease.scope(key, lambda source: self._scope(source, key))
        at = scope.at_commit
        try:
            answer = work(scope)
        except BaseException:
            scope.close()
            raise
        if scope.at_commit == at and scope.answers is None:
            lease.keep(key, scope)
        else:
            scope.close()
        return answer

    def _scope(self, con: Any, key: tuple) -> Any:
        from ..read.scope import ReadScope

        at, tenant, overlay, level, include_expired = key
        return ReadScope(con, self.git, at, dict(tenant), overlay=overlay, ceiling=level, include_expired=include_expired)

    # -- the write path ----------------------------------------------------------------------
    def tree_states(self) -> Any:
        """The write path's rule state, moved along with the proposal branch; a bound writer's
        holds the documents its tenant can see (docs/design.md §8a)."""
        if self._states is None:
            from ..write.proposal import TreeStates

            self._states = TreeStates(self.git, self.binding.as_dict())
        return self._states

    def branch_of(self, destination: ProposalBranch) -> str | None:
        return destination.name or self.branch

    def statement_base(self, destination: ProposalBranch | None) -> str:
        """The commit a statement is made against: the proposal branch's tip, else HEAD."""
        from ..write.proposal import DEFAULT_BRANCH

        if destination is not None:
            tip, _ = self.git.branch_tip(self.branch_of(destination) or DEFAULT_BRANCH)
            if tip:
                return tip
        return self.git.resolve("HEAD")

    def documents(self, destination: ProposalBranch | None) -> Any:
        """The rule state of the documents a statement may name: the proposal branch's tip
        (else HEAD) for a commit, else every document of the work tree, committed or not; a
        bound writer's, the documents its tenant can see."""
        if destination is not None:
            return self.tree_states().at(self.statement_base(destination))
        from ..gate.near import NearState

        return NearState.of_worktree(self.git, self.binding.as_dict())

    def default_source(self) -> str:
        from ..write.proposal import default_source

        return default_source(self.git)


class _Block:
    """The connection and the read scopes of one `together` block."""

    def __init__(self) -> None:
        self.con: Any = None
        self.scopes: dict[tuple, tuple[Any, str]] = {}  # key → (scope, the commit it reads)

    def connection(self, connect: Callable[[], Any]) -> Any:
        if self.con is None:
            self.con = connect()
        return self.con

    def scope(self, key: tuple, make: Callable[[Any, tuple], Any]) -> Any:
        """The scope of `key`, made by its first read; at the commit it was made at (a read that
        walks the chain, `history`, moves it)."""
        if key not in self.scopes:
            scope = make(self.con, key)
            scope.answers = {}
            self.scopes[key] = (scope, scope.at_commit)
        scope, commit = self.scopes[key]
        scope.move_to(commit)
        return scope

    def close(self) -> None:
        for scope, _ in self.scopes.values():
            scope.close()
        self.scopes.clear()
        if self.con is not None:
            self.con.close()
            self.con = None


def _unanswered(exc: BaseException) -> ObsrepoError:
    return ObsrepoError(f"the index could not answer: {type(exc).__name__}: {exc}",
                        code=errors.INTERNAL_ERROR, duckdb=type(exc).__name__)


def _duckdb_error() -> type[BaseException]:
    import duckdb

    return duckdb.Error
