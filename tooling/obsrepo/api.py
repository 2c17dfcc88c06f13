"""The library facade: `Repository(path)`, a small typed convenience over the door (`ops/`).

    from obsrepo import Repository
    repo = Repository(".", tenant={"org": "northwind"})
    repo.index()
    page = repo.query(scopes=("task/42",), text="payment overdue", match="hybrid")
    rows = repo.sql("SELECT count(*) AS n FROM observations")

A method is an operation of `ops.OPERATIONS` (any operation not listed below is a method
by its own name, through `__getattr__`): its parameters are the fields of the operation's
request, in their order (`repo.snapshot("company/acme", at="v1.2")` builds
`ops.Snapshot("company/acme", at="v1.2")`), so every option the command line or an MCP tool
offers is also a parameter here, and a field added to a request is a parameter at once. A
write takes `commit` and `branch` instead of the request's `destination`. The adapters (CLI,
MCP, the watcher) use `ops` directly. Errors name the request's fields (`at`, `limit`), as
every operation's do.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

from . import ops
from .ops import Binding, Ceiling, ProposalBranch, Session, run
from .read.query import QueryRequest

Progress = Callable[[int, int], None]


def _json(answer: Any) -> Any:
    return answer.to_json()


def _fields(request: type) -> list[inspect.Parameter]:
    """The request's fields as parameters, in their order, with their defaults."""
    hints = typing.get_type_hints(request)  # the plain types: what a field's `Field` says is in its docs
    return [inspect.Parameter(f.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=hints[f.name], default=_default(f))
            for f in dataclasses.fields(request)]


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return inspect.Parameter.empty


@functools.cache
def _tuple_fields(request: type) -> frozenset[str]:
    """The fields of `request` that hold a tuple (`types`, `targets`), where a caller may give a list."""
    hints = typing.get_type_hints(request)
    return frozenset(name for name, hint in hints.items()
                     if tuple in (typing.get_origin(hint), *(typing.get_origin(a) for a in typing.get_args(hint))))


def _tuples(request: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """A list given for a field that holds a tuple becomes a tuple (a JSON value stays as given)."""
    held = _tuple_fields(request)
    return {name: tuple(value) if name in held and isinstance(value, list) else value for name, value in values.items()}


class _Operation:
    """A method of `Repository` for the operation of the request named `request`: called with
    the request's fields (positionally in their order, or by name); answers its JSON, or
    what `answer` makes of the response. A write (`commit` given: its default) takes `commit`
    and `branch` for the request's `destination`."""

    def __init__(self, request: str | type, answer: Callable[[Any], Any] = _json, *, commit: bool | None = None) -> None:
        self.request, self.answer, self.commit = request, answer, commit
        self._signature: inspect.Signature | None = None

    def request_type(self) -> type:
        """The request class (named: loaded with its module of the door on first use)."""
        found: type = getattr(ops, self.request) if isinstance(self.request, str) else self.request
        return found

    def __set_name__(self, owner: type, name: str) -> None:
        self.__name__ = name

    def __get__(self, repository: Repository | None, owner: type) -> Any:
        if repository is None:
            return self

        def method(*args: Any, **given: Any) -> Any:
            return self(repository, *args, **given)

        method.__name__ = method.__qualname__ = self.__name__
        method.__doc__ = self.request_type().__doc__
        method.__signature__ = self.__signature__.replace(  # type: ignore[attr-defined]
            parameters=list(self.__signature__.parameters.values())[1:])
        return method

    def __call__(self, repository: Repository, *args: Any, **given: Any) -> Any:
        request: type = self.request_type()
        if self.commit is not None:
            given["destination"] = ops.destination(given.pop("commit", self.commit), given.pop("branch", None))
        names = [f.name for f in dataclasses.fields(request)]
        if len(args) > len(names) or set(names[:len(args)]) & set(given):
            inspect.signature(request).bind(*args, **given)  # raises the TypeError Python gives for such a call
        values = request(**_tuples(request, {**dict(zip(names, args)), **given}))
        return self.answer(run(repository.session, values))

    @property
    def __signature__(self) -> inspect.Signature:
        """`self`, then the request's fields (for a write, `commit` and `branch` for its `destination`)."""
        if self._signature is None:
            params = [p for p in _fields(self.request_type()) if p.name != "destination" or self.commit is None]
            if self.commit is not None:
                params += [inspect.Parameter("commit", inspect.Parameter.KEYWORD_ONLY, default=self.commit, annotation="bool"),
                           inspect.Parameter("branch", inspect.Parameter.KEYWORD_ONLY, default=None,
                                             annotation="str | None")]
            self._signature = inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY), *params])
        return self._signature


def _query(request: QueryRequest | None, at: str | None, where: Mapping[str, str] | None, overlay: bool | None,
           fields: Mapping[str, Any]) -> ops.Query:
    """`ops.Query` from a `QueryRequest` (the engine's, as earlier releases took it), `at`,
    `where` (tenant keys) and `overlay`, and any of the query's own fields by name."""
    given: dict[str, Any] = {}
    if request is not None:
        known = {f.name for f in dataclasses.fields(ops.Query)}
        given = {f.name: getattr(request, f.name) for f in dataclasses.fields(request) if f.name in known}
    given.update({"at": at, "overlay": overlay, **dict(where or {})})
    given.update(_tuples(ops.Query, fields))
    given["scopes"] = tuple(given.get("scopes", ()))
    return ops.Query(**given)


def _with_query_fields(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method`'s own parameters, then every field of `ops.Query` it does not name, by keyword:
    what `inspect.signature` and `help()` show."""
    own = inspect.signature(method)
    taken = set(own.parameters)
    extra = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in _fields(ops.Query) if p.name not in taken]
    params = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    method.__signature__ = own.replace(parameters=params + extra)  # type: ignore[attr-defined]
    return method


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

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """Any other registered operation, by its name (`repo.embed_pull(hub_id)`): a new
        operation is a method at once, with nothing to edit here."""
        if name.startswith("_"):
            raise AttributeError(name)
        found = ops.OPERATIONS.get(name)
        if found is None:
            raise AttributeError(f"'Repository' has no attribute {name!r} (and no operation is named so)")
        method = _Operation(found.request, commit=True if found.kind == "writes" else None)
        method.__set_name__(Repository, name)
        bound: Callable[..., Any] = method.__get__(self, Repository)
        return bound

    # -- the gate and the index ------------------------------------------------------------
    check = _Operation("Check", lambda done: done.report)  # a `Report` (`.ok`, `.issues`)
    index = _Operation("Index", lambda done: done.result)  # a `BuildResult`
    status = _Operation("Status")
    sql = _Operation("Sql", lambda rows: (rows.columns, rows.rows))  # (column names, rows)
    embed_pull = _Operation("EmbedPull")

    def embedder_info(self, *texts: str) -> dict[str, Any]:
        """The configured embedder ({provider, fingerprint, dimension, vectors}) and the vectors of `texts`."""
        return run(self.session, ops.EmbedInfo(texts=texts)).to_json()

    # -- reads -----------------------------------------------------------------------------
    @_with_query_fields
    def query(self, request: QueryRequest | None = None, at: str | None = None, where: dict[str, str] | None = None,
              overlay: bool | None = None, **fields: Any) -> dict[str, Any]:
        """Scoped observations: the fields of `ops.Query` by name (`text`, `match`, `fusion`,
        `alpha`, `semantic_k`, `embedding` …), or an engine `QueryRequest`. `where` narrows by
        tenant keys inside the caller's binding."""
        return run(self.session, _query(request, at, where, overlay, fields)).to_json()

    @_with_query_fields
    def export(self, request: QueryRequest | None, fmt: str, output: str | None = None, *, at: str | None = None,
               where: dict[str, str] | None = None, out: Any = None, progress: Progress | None = None,
               **fields: Any) -> dict[str, Any]:
        """Every observation `query` would match (paging aside): {"format", "output", "count"}."""
        return run(self.session, ops.Export(_query(request, at, where, None, fields), fmt, output, out, progress)).to_json()

    facets = _Operation("Facets")
    snapshot = _Operation("Snapshot")
    provenance = _Operation("Provenance")
    entities = _Operation("Entities")
    find = _Operation("Find")
    observations = _Operation("Observations")
    relationships = _Operation("Relations")
    related = _Operation("Related")
    timeline = _Operation("Timeline")
    history = _Operation("History")
    show = _Operation("Show")
    comprehensions = _Operation("Comprehensions")
    belief = _Operation("Belief")
    retention = _Operation("Retention")
    recall = _Operation("Recall")
    publication = _Operation("Publication", lambda rows: rows)  # `PublicationRows` (Arrow tables)

    # -- review ------------------------------------------------------------------------------
    diff = _Operation("Diff")  # what BASE..HEAD changes in the truth (docs/design.md §12)
    check_document = _Operation("CheckDocument")  # `check`'s JSON report for one document's text

    # -- writes (docs/design.md §11) -------------------------------------------------------------
    new = _Operation("New", commit=False)  # into the work tree: {"id", "path", "content_hash"}
    correct = _Operation("Correct", commit=True)
    retract = _Operation("Retract", commit=True)
    relate = _Operation("Relate", commit=True)
    merge = _Operation("Merge", commit=True)
    feedback = _Operation("Feedback", commit=True)
    reclassify = _Operation("Reclassify", commit=True)
    comprehend = _Operation("Comprehend", commit=True)

    def propose(self, front: dict[str, Any], body: str = "", *, branch: str | None = None,
                tool: str = "propose") -> dict[str, Any]:
        """One new observation as one new commit on the proposal branch."""
        return run(self.session, ops.New(front, body, ProposalBranch(branch), tool)).to_json()


def new_observation(path: str, front: dict[str, Any], body: str = "", *, tenant: dict[str, str] | None = None) -> Any:
    """`Repository.new` in the repository that contains `path`: a `Created`. Outside a git
    repository it is GIT_ERROR and nothing is written (docs/design.md §8a)."""
    from .gitstore import Git
    from .write.new import create
    from .write.statements import stamp_tenant

    return create(Git.at(path), stamp_tenant(front, tenant or {}), body, binding=tenant)
