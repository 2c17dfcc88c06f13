"""Read operations: questions asked of the index at one commit, within the caller's binding.

Each request holds what a caller gives (text, numbers, flags: what a JSON client can send);
its operation parses every value once (values.py), errors naming the request's field, and asks
the engine with values it can trust.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from ..errors import UsageError
from ..format.vocabulary import CONFIDENCES
from ..params import MAX_LIMIT
from .fields import At, Field, Limit, MaxClassification, Offset, moment, text_field
from .registry import Answer, operation
from .session import Session
from .values import Binding, Ceiling, Moment, Page

MATCHES = ("lexical", "semantic", "hybrid")
FUSIONS = ("cc", "rrf")
HINTS = ("auto", "off")
MAX_SEMANTIC_K = 10_000


# -- observations -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Query:
    """Observations that match every filter given (AND): seed 002's query."""

    scopes: Annotated[tuple[Annotated[str, text_field("", 512)], ...],
                      Field("Scope ids; an observation matches when it has ANY of them.", max_items=100)] = ()
    type: Annotated[str | None, text_field("Exact event type, e.g. task.updated.", 256)] = None
    source: Annotated[str | None, text_field("Source prefix, taken literally (agent: matches agent:x; _ and % are no "
                                             "wildcards).", 512)] = None
    after: Annotated[str | int | datetime | None, moment("From this time on (inclusive)")] = None
    before: Annotated[str | int | datetime | None, moment("Before this time (exclusive)")] = None
    entity: Annotated[str | None, text_field("Only observations about this entity (type/key).", 512)] = None
    text: Annotated[str | None, text_field("Full-text search (BM25) over event and body; best matches first, records "
                                           "carry a score.", 1024)] = None
    max_classification: MaxClassification = None
    include_retracted: Annotated[bool, Field("Also list observations that were retracted.")] = False
    include_expired: Annotated[bool, Field("Also list observations that retention expired.")] = False
    unweighted: Annotated[bool, Field("`text` ranks without feedback weights.")] = False
    limit: Limit = 50
    offset: Offset = 0
    order: Annotated[str, Field("By timestamp then id: newest first (desc) or oldest first (asc).",
                                choices=("desc", "asc"))] = "desc"
    at: At = None
    # tenant filters: narrow the caller's binding, never widen it
    org: Annotated[str | None, Field("Only observations whose tenant has this org.")] = None
    project: Annotated[str | None, Field("Only observations whose tenant has this project.")] = None
    agent: Annotated[str | None, Field("Only observations whose tenant has this agent.")] = None
    user: Annotated[str | None, Field("Only observations whose tenant has this user.")] = None
    overlay: Annotated[bool | None, Field("Also list a running watcher's uncommitted drafts; default: the session's "
                                          "setting.")] = None
    # ranking by meaning (docs/design.md §15); match: default hybrid with an embedder and a text
    match: Annotated[str | None, Field("How `text` ranks: lexical (BM25), semantic (cosine of an embedder's vectors) or "
                                       "hybrid (both; the default with an embedder configured, else lexical). A query "
                                       "vector of the caller's own (`embedding`) ranks by meaning too.",
                                       choices=MATCHES)] = None
    alpha: Annotated[float, Field("hybrid: the cosine's share of the score (0..1).")] = 0.3
    fusion: Annotated[str, Field("hybrid: a weighted sum of the scores (cc) or reciprocal rank fusion (rrf).",
                                 choices=FUSIONS)] = "cc"
    semantic_k: Annotated[int, Field("semantic and hybrid: the K nearest by cosine are candidates.", minimum=1,
                                     maximum=MAX_SEMANTIC_K, placeholder="K")] = 100
    time_hint: Annotated[str, Field("`text` naming a date, a month or a year with its year (\"in May 2023\"): auto ranks "
                                    "the observations of that period higher; off ranks by the words alone.",
                                    choices=HINTS)] = "auto"
    entity_hint: Annotated[str, Field("`text` naming an entity by a word of its key (\"Caroline\" for person/caroline): "
                                      "auto ranks the observations about it higher; off ranks by the words alone.",
                                      choices=HINTS)] = "auto"
    embedding: Annotated[tuple[float, ...] | None,
                         Field("The caller's own query vector, of the configured embedder's kind and size: ranks by "
                               "meaning without embedding `text`.", max_items=8192)] = None


class QueryPage(Answer):
    """{observations, total, limit, offset, at_commit}; ranked by meaning, also semantic_coverage."""


def meaning(session: Session, request: Query) -> Any:
    """The engine's `Semantic` for a query ranked by meaning, None for the lexical path. The
    query's text is embedded here (EMBEDDER_ERROR when the provider fails), unless the caller
    gave its own vector (`embedding`: of the configured embedder's kind and size)."""
    if request.match is not None and request.match not in MATCHES:
        raise UsageError(f"match '{request.match}' is lexical, semantic or hybrid", parameter="match")
    if request.fusion not in FUSIONS:
        raise UsageError(f"fusion '{request.fusion}' is cc or rrf", parameter="fusion")
    if not 0.0 <= request.alpha <= 1.0:
        raise UsageError(f"alpha {request.alpha} is not between 0 and 1", parameter="alpha")
    if not 1 <= request.semantic_k <= MAX_SEMANTIC_K:
        raise UsageError(f"semantic_k {request.semantic_k} is not between 1 and {MAX_SEMANTIC_K}", parameter="semantic_k")
    given = request.embedding is not None
    match = request.match
    if match is None:
        if request.text:
            match = "hybrid" if given or session.embedder() is not None else "lexical"
        else:
            match = "semantic" if given else "lexical"
    if match == "lexical":
        if given:
            raise UsageError("embedding ranks by meaning: `match` lexical ranks by the text alone", parameter="embedding")
        return None
    if not request.text and not (given and match == "semantic"):
        raise UsageError(f"match {match} ranks by meaning and needs `text`"
                         + (" (hybrid: also with `embedding`, for its lexical half)" if given else ""), parameter="match")
    field = "embedding" if given else "match"
    embedder = session.embedder()
    if embedder is None:
        raise UsageError(f"{field}: ranking by meaning needs an embedder, and none is configured: set OBSREPO_EMBEDDER or "
                         "`embedder` (model2vec:<model folder>, openai:<model>, ollama:<model>), then run `obsrepo index`",
                         parameter=field)
    from ..read.semantic import Semantic

    if not given:
        (vector,) = embedder.embed([request.text])  # first: a remote model's size comes with it
    cache = session.vector_cache()
    if cache is None:  # only with a caller's vector: a remote model that has embedded nothing here
        raise UsageError(f"embedding: the configured embedder ({embedder.provider}:{getattr(embedder, 'model', '')}) "
                         "has embedded nothing in this repository yet, so the size of its vectors is not known: run "
                         "`obsrepo index` first", parameter="embedding")
    if given:
        vector = _given_vector(request.embedding or (), cache.dimension, cache.fingerprint)
    # a local model embeds the few texts an update left pending (embed.DEFERRED_TEXTS)
    local = embedder if getattr(embedder, "local", False) else None
    return Semantic(match, request.alpha, request.fusion, request.semantic_k, vector, cache, local)


def _given_vector(values: tuple[float, ...], dimension: int, fingerprint: str) -> Any:
    """A caller's own query vector, as float32: as many finite numbers as the embedder's vectors have."""
    from ..embed import float32_vector

    if len(values) != dimension:
        raise UsageError(f"embedding has {len(values)} numbers; the configured embedder's vectors ({fingerprint}) have "
                         f"{dimension}", parameter="embedding")
    try:
        return float32_vector(values)  # finite as float32, the vectors' precision (§8b): 1e300 is not
    except ValueError as exc:
        raise UsageError(f"embedding {exc}: it holds only numbers finite in float32", parameter="embedding") from None


def filters(request: Query) -> Any:
    """The engine's query request, every value parsed and checked (fields named)."""
    from ..read.query import QueryRequest

    page = Page.of(request.limit, request.offset)
    if request.order not in ("asc", "desc"):
        raise UsageError("order is asc or desc", parameter="order")
    for name in ("time_hint", "entity_hint"):
        if getattr(request, name) not in HINTS:
            raise UsageError(f"{name} '{getattr(request, name)}' is auto or off", parameter=name)
    after, before = Moment.optional(request.after, "after"), Moment.optional(request.before, "before")
    Ceiling.parse(request.max_classification, "max_classification")
    return QueryRequest(scopes=tuple(request.scopes), type=request.type, source=request.source,
                        after=after.value if after else None, before=before.value if before else None,
                        entity=request.entity, text=request.text, max_classification=request.max_classification,
                        include_retracted=request.include_retracted, include_expired=request.include_expired,
                        unweighted=request.unweighted, limit=page.limit, offset=page.offset, order=request.order,
                        rank_in_time=request.time_hint == "auto", rank_about=request.entity_hint == "auto")


def _where(request: Query) -> dict[str, str | None]:
    return {"org": request.org, "project": request.project, "agent": request.agent, "user": request.user}


@operation("query", "reads")
def query(session: Session, request: Query) -> QueryPage:
    """While `obsrepo watch` runs, the page also holds the work tree's valid drafts (records
    with `uncommitted: true`) unless `overlay` is False or `at` is given."""
    from ..read.query import run_query

    engine = filters(request)
    engine.semantic = meaning(session, request)
    at = session.at(request.at)
    binding = session.binding.narrow(_where(request))
    if binding is None:  # a tenant filter outside the binding: nothing matches
        return QueryPage({"observations": [], "total": 0, "limit": engine.limit, "offset": engine.offset,
                          "at_commit": at.sha if at else None})
    overlay = session.overlay if request.overlay is None else request.overlay
    return QueryPage(session.read(lambda scope: run_query(scope, engine), at, binding, overlay=overlay,
                                  ceiling=Ceiling(request.max_classification), include_expired=request.include_expired,
                                  stems=bool(request.text) or at is not None))


@dataclass(frozen=True)
class Export:
    """Every observation `query` would match (paging aside), written to `output` or `out`."""

    query: Query
    format: str
    output: str | None = None
    out: Any = None  # a binary stream (standard output) when there is no `output`
    progress: Any = None  # progress(done, total)


class Exported(Answer):
    """{format, output, count}."""


@operation("export", "reads")
def export(session: Session, request: Export) -> Exported:
    from ..read.export import export as write_rows

    engine = filters(request.query)
    at = session.at(request.query.at)
    # a tenant filter outside the binding: a binding nothing matches (no tenant value holds a space)
    narrowed = session.binding.narrow(_where(request.query))
    binding = Binding.of({"org": " "}) if narrowed is None else narrowed
    # the statements are ours (no caller's SQL): the connection may write files
    return Exported(session.read(
        lambda scope: write_rows(scope, engine, request.format, request.output, out=request.out, progress=request.progress),
        at, binding, ceiling=Ceiling(request.query.max_classification), include_expired=engine.include_expired,
        sandbox=False))


@dataclass(frozen=True)
class Show:
    observation_id: Annotated[str, Field("An observation id, e.g. obs-20260402-091000-c4651c5f.", min_length=1,
                                         max_length=256, placeholder="ID")]
    at: At = None


class Shown(Answer):
    """One observation for a reviewer: front matter, body, the commit that added it, what it
    corrects or retracts, who retracts it, the fields of its entity it wins."""


@operation("show", "reads")
def show(session: Session, request: Show) -> Shown:
    from ..read.show import show as one

    return Shown(session.read(lambda scope: one(scope, request.observation_id), session.at(request.at)))


# -- beliefs, stewardship, the index ------------------------------------------------------------
@dataclass(frozen=True)
class Comprehensions:
    domain: Annotated[str | None, text_field("Only this domain.", 512)] = None
    confidence: Annotated[str | None, Field("Only beliefs held with this confidence.", choices=CONFIDENCES)] = None
    text: Annotated[str | None, Field("Only beliefs whose topic, statements or body hold every word.", min_length=1,
                                      max_length=1024, placeholder="WORDS")] = None
    limit: Limit = 50
    offset: Offset = 0


class Beliefs(Answer):
    """{comprehensions, total, limit, offset}."""


@operation("comprehensions", "reads")
def comprehensions(session: Session, request: Comprehensions) -> Beliefs:
    """The beliefs of the indexed commit, by id."""
    from ..read.comprehensions import comprehensions as listed

    page = Page.of(request.limit, request.offset)
    return Beliefs(session.read(lambda scope: listed(scope, request.domain, request.confidence, request.text,
                                                     page.limit, page.offset)))


@dataclass(frozen=True)
class Retention:
    at: At = None
    limit: Annotated[int, Field(f"At most this many of each list (1..{MAX_LIMIT}).", minimum=1, maximum=MAX_LIMIT)] = 50


class Expiry(Answer):
    """What the retention policies expired at the commit, and what expires next."""


@operation("retention", "reads")
def retention(session: Session, request: Retention) -> Expiry:
    from ..read.retention import retention as expired

    page = Page.of(request.limit)
    return Expiry(session.read(lambda scope: expired(scope, page.limit), session.at(request.at), include_expired=True))


@dataclass(frozen=True)
class Status:
    """The index's state: indexed commit, commits behind HEAD, the watcher and its overlay."""


class IndexState(Answer):
    """{index, indexed_commit, head, behind, watcher, overlay_documents, last_update, problem, semantic,
    identity: {fingerprint, types, fields, candidates}}."""


@operation("status", "reads")
def status(session: Session, request: Status) -> IndexState:
    """A bound caller (a tenant or a ceiling) is not told the index's counts: they are every
    tenant's (docs/design.md §6, §8b); they read null."""
    from ..read.status import index_status

    state = index_status(session.git, session.index_file, session.embedder)
    if session.binding or session.ceiling.level is not None:
        state["overlay_documents"] = None
        if state["last_update"]:
            state["last_update"] = {**state["last_update"], **{k: None for k in ("added", "removed") if k in state["last_update"]}}
        if state["semantic"]:
            state["semantic"] = {**state["semantic"], "embedded": None, "pending": None}
        if state["identity"]:
            state["identity"] = {**state["identity"], "candidates": None}
    return IndexState(state)


@dataclass(frozen=True)
class Overview:
    """What the inspector's home page says at one commit: observations counted, recent commits."""

    recent: int = 10
    at: At = None


class Counted(Answer):
    """{observations: {visible, retracted, listed, expired}, commits: [{commit, committed_at,
    author, added, removed, first}], at_commit} — within the caller's binding and ceiling."""


@operation("overview", "reads")
def overview(session: Session, request: Overview) -> Counted:
    from ..read.overview import overview as counted

    page = Page.of(request.recent)
    return Counted(session.read(lambda scope: counted(scope, page.limit), session.at(request.at)))


@dataclass(frozen=True)
class Sql:
    """One read-only statement over the index's tables (every tenant's rows: unbound callers only)."""

    statement: Annotated[str, Field("One read-only SQL statement.", min_length=1)]
    timeout: Annotated[float, Field("Stop the statement after this long (QUERY_TIMEOUT, exit 4).",
                                    placeholder="SECONDS")] = 30.0
    memory_limit: Annotated[str, Field("The most memory the statement may use, e.g. 512MB, 4GB (QUERY_MEMORY_LIMIT, "
                                       "exit 4).", placeholder="AMOUNT")] = "1GB"


@dataclass(frozen=True)
class Rows:
    columns: list[str]
    rows: list[tuple]

    def to_json(self) -> dict[str, Any]:
        return {"columns": self.columns, "rows": [list(row) for row in self.rows]}


@operation("sql", "reads")
def sql(session: Session, request: Sql) -> Rows:
    from ..read.sql import check_limits, run_sql

    if session.binding:
        raise UsageError("`sql` reads every tenant's rows; it is not available to a tenant-bound caller",
                         parameter="tenant")
    memory_limit = check_limits(request.timeout, request.memory_limit)
    columns, rows = session.read(lambda con: run_sql(con, request.statement, timeout=request.timeout,
                                                     memory_limit=memory_limit), scoped=False, memory_limit=memory_limit)
    return Rows(columns, rows)


@dataclass(frozen=True)
class Facets:
    """How many observations a query matches (paging aside) have each type, source, entity
    type and tenant value: the inspector's search filters (docs/design.md §17)."""

    query: Query


class FacetCounts(Answer):
    """{facets: {type|source|entity_type|org|project|agent|user: [{value, count}]}, total, at_commit}."""


@operation("facets", "reads")
def facets(session: Session, request: Facets) -> FacetCounts:
    from ..read.facets import facets as count

    engine = filters(request.query)
    at = session.at(request.query.at)
    binding = session.binding.narrow(_where(request.query))
    if binding is None:  # a tenant filter outside the binding: nothing matches
        return FacetCounts({"facets": {}, "total": 0, "at_commit": at.sha if at else None})
    return FacetCounts(session.read(lambda scope: count(scope, engine), at, binding, ceiling=Ceiling(request.query.max_classification),
                                    include_expired=request.query.include_expired))
