"""Scoped queries over the index (docs/design.md §6): filters, paging, BM25 text.

Everything reads through a `ReadScope` (scope.py): its `visible` relation already holds the
rows of the requested commit within the caller's tenant binding, so nothing here filters by
tenant or commit.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..index.columns import RECORD, quoted
from ..index.schema import CLASSIFICATION_RANK
from ..times import format_timestamp
from .scope import TENANT_COLUMNS, ReadScope, entity_clause
from .valid import counting_at


@dataclass
class QueryRequest:
    """The engine's query, every value already parsed and checked by the door (ops/reads.py
    `filters`: the page, the order, the moments, the ceiling), so nothing here checks it again."""

    scopes: tuple[str, ...] = ()
    type: str | None = None
    source: str | None = None
    after: datetime | None = None
    before: datetime | None = None
    entity: str | None = None
    entities: tuple[str, ...] = ()  # any of these (recall's named entities and those merged into them)
    max_classification: str | None = None
    text: str | None = None
    include_retracted: bool = False
    include_expired: bool = False  # keep what retention expired (docs/design.md §14)
    unweighted: bool = False  # --text ranks by BM25 alone (docs/design.md §14)
    limit: int = 50
    offset: int = 0
    order: str = "desc"
    semantic: Any = None  # semantic.Semantic: --match semantic|hybrid (docs/design.md §15)
    rank_in_time: bool = True  # a row observed in a period the text names ranks higher (hints.py)
    rank_about: bool = True  # a row about an entity the text names ranks higher (hints.py)
    brief: bool = False  # records of BRIEF's keys only (recall's): a page then reads no body, data or context
    as_of: str | None = None  # valid time (docs/design.md §19): only the rows whose effective interval holds it


def _naive_utc(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def _filters(request: QueryRequest, keyed: str | None = None) -> tuple[str, list[Any]]:
    """The request's conditions over `o`; `keyed`: the kind of key the relation was read by
    (its rows hold one of the request's scopes already, and have no scope column)."""
    clauses: list[str] = ["TRUE"]
    params: list[Any] = []
    if request.scopes and keyed != "scope":  # list_contains is cheaper than list_has_any
        clauses.append("(" + " OR ".join("list_contains(o.scope, ?)" for _ in request.scopes) + ")")
        params.extend(request.scopes)
    if request.type is not None:
        clauses.append("o.type = ?")
        params.append(request.type)
    if request.source is not None:
        clauses.append("starts_with(o.source, ?)")
        params.append(request.source)
    if request.after is not None:
        clauses.append("o.timestamp >= ?")
        params.append(_naive_utc(request.after))
    if request.before is not None:
        clauses.append("o.timestamp < ?")
        params.append(_naive_utc(request.before))
    for named in ([request.entity] if request.entity is not None else [], list(request.entities or ())):
        if named:
            clause, values = entity_clause(named, by_key=keyed is None)  # obs_keys holds no entity key
            clauses.append(clause)
            params.extend(values)
    if request.as_of is not None:
        clauses.append(counting_at(request.as_of, None))
    if request.max_classification is not None:
        clauses.append("o.class_rank <= ?")
        params.append(CLASSIFICATION_RANK[request.max_classification])
    return " AND ".join(clauses), params


def _columns(names: list[str]) -> str:
    return ", ".join("strftime(o.timestamp, '%Y-%m-%dT%H:%M:%S.%f') AS ts" if name == "timestamp" else f"o.{quoted(name)}"
                     for name in names)


RECORD_SQL = _columns(RECORD)  # the order `_record` unpacks
BRIEF = ["id", "timestamp", "event", "entity", "commit"]
BRIEF_SQL = _columns(BRIEF)  # the order `_brief` unpacks


def run_query(scope: ReadScope, request: QueryRequest) -> dict[str, Any]:
    """One page of observations. The filters run over narrow columns only (row id, timestamp,
    id): the page's records are fetched afterwards, so a query costs the same whatever the
    size of the bodies it skips."""
    relation, keyed = _reading(scope, request)
    where, params = where_matching(scope, request, keyed)
    direction = "DESC" if request.order == "desc" else "ASC"
    order = f"timestamp {direction}, id {direction}"
    matching = f"SELECT o.row_id, o.timestamp, o.id FROM {relation} AS o WHERE {where}"
    page: list[tuple[int, float | None]]
    if request.semantic is not None:
        return _meaning_page(scope, matching, params, request, order)
    if request.text:
        page, total = _text_page(scope, matching, params, request, order)
    else:
        # the matches filtered once, then counted and cut to the page: a window over every match
        # would carry them all to the top-N
        rows = scope.rows(f"WITH m AS MATERIALIZED ({matching}) SELECT row_id, (SELECT count(*) FROM m) FROM m "
                          f"ORDER BY {order} LIMIT ? OFFSET ?", params + [request.limit, request.offset])
        page = [(row_id, None) for row_id, _ in rows]
        if rows:
            total = rows[0][1]
        else:  # past the last page
            total = scope.one(f"SELECT count(*) FROM ({matching})", params)[0]
    records = fetch_records(scope, [row_id for row_id, _ in page], request.brief)
    weights = _row_weights(scope, [row_id for row_id, _ in page]) if request.text else {}
    observations = []
    for row_id, score in page:
        record = records[row_id]
        if request.text:
            record["weight"] = weights[row_id]
            record["score"] = score
        observations.append(record)
    return {
        "observations": observations,
        "total": total,
        "limit": request.limit,
        "offset": request.offset,
        "at_commit": scope.at_commit,
    }


def _meaning_page(scope: ReadScope, matching: str, params: list, request: QueryRequest, order: str) -> dict[str, Any]:
    """A page ranked by `semantic.ranked`: records with `score` and `scores` {lexical, semantic,
    weight}, the page with `semantic_coverage`."""
    from .semantic import ranked

    page = ranked(scope, matching, params, request.text or "", request.semantic, order, not request.unweighted,
                  request.offset, request.limit, (request.rank_in_time, request.rank_about))
    records = fetch_records(scope, [item.row_id for item in page.items], request.brief)
    observations = []
    for item in page.items:
        record = records[item.row_id]
        record["score"] = item.score
        record["scores"] = {"lexical": item.lexical, "semantic": item.semantic, "weight": item.weight, "hint": item.hint}
        observations.append(record)
    return {"observations": observations, "total": page.total, "limit": request.limit, "offset": request.offset,
            "at_commit": scope.at_commit, "semantic_coverage": page.coverage}


def _reading(scope: ReadScope, request: QueryRequest) -> tuple[str, str | None]:
    """The relation the matches are read from and the kind of key it was read by: a request
    that names scopes or a type reads its rows by key (`ReadScope.keyed`: a few blocks, not a
    scan of every row), where the keys can say (they hold no period: not with `as_of`); else `visible`."""
    if request.as_of is not None:
        return "visible", None
    for kind, values in (("scope", request.scopes), ("type", (request.type,) if request.type is not None else ())):
        if values:
            relation = scope.keyed(kind, values)
            if relation is not None:
                return relation, kind
            break
    return "visible", None


def where_matching(scope: ReadScope, request: QueryRequest, keyed: str | None = None) -> tuple[str, list[Any]]:
    """The request's filters over `visible AS o` (or the relation `keyed` says it was read by)
    and, unless it includes them, no retracted row."""
    where, params = _filters(request, keyed)
    if not request.include_retracted:
        hidden = retracted_rows(scope)
        if hidden:
            where += " AND NOT list_contains(?::BIGINT[], o.row_id)"
            params.append(hidden)
    return where, params


def retracted_rows(scope: ReadScope) -> list[int]:
    """Row ids of the visible observations that a visible retraction in the same tenant
    mapping retracts (sorted)."""
    same_tenant = " AND ".join(f"g.{c} IS NOT DISTINCT FROM o.{c}" for c in TENANT_COLUMNS.values())
    sql = f"""
    WITH g AS (SELECT unnest(r.retracts) AS target, {", ".join(f"r.{c}" for c in TENANT_COLUMNS.values())}
               FROM visible AS r WHERE r.special AND len(r.retracts) > 0)
    SELECT DISTINCT o.row_id FROM visible AS o JOIN g ON g.target = o.id AND {same_tenant} ORDER BY 1
    """
    return scope.remember(("retracted", *scope.view_key()), lambda: [row[0] for row in scope.rows(sql)])


def fetch_records(scope: ReadScope, row_ids: list[int], brief: bool = False) -> dict[int, dict[str, Any]]:
    """Records by row id; a watcher's draft (a negative id far below the rest) says `uncommitted`.
    `brief`: BRIEF's keys only; the scan then reads a few narrow columns of the rows it passes
    over instead of every printed one (what costs most when the rows are far apart)."""
    from ..index.drafts_table import is_draft_row

    found: dict[int, dict[str, Any]] = {}
    drafts = [r for r in row_ids if is_draft_row(r)]
    for ids in (drafts, [r for r in row_ids if not is_draft_row(r)]):  # each a narrow row-id range
        if not ids:
            continue
        for row in _record_rows(scope, ids, brief):
            found[row[0]] = _brief(row[1:]) if brief else _record(row[1:], False)
            if ids is drafts:
                found[row[0]]["uncommitted"] = True
    if scope.raised is not None and row_ids and not brief:  # a reclassify document raised some: records say the effective level
        from ..format.vocabulary import CLASSIFICATIONS

        for row_id, rank in scope.rows(f"SELECT row_id, rank FROM {scope.raised} WHERE list_contains(?::BIGINT[], row_id)",
                                       [row_ids]):
            if row_id in found:
                found[row_id]["classification"] = CLASSIFICATIONS[rank]
    return found


RECORDS_KEPT = 4096  # the records of its latest pages a kept-open reader keeps per index generation and view
_KEEPING = threading.Lock()


def _record_rows(scope: ReadScope, ids: list[int], brief: bool) -> list[tuple]:
    """The rows of `ids` as `fetch_records` unpacks them. A kept-open reader keeps those of its
    latest pages for the index generation and view (commit, binding, ceiling, retention, drafts:
    `view_key`), so a record is read by row id once, not once per page it appears on."""
    def read(wanted: list[int]) -> list[tuple]:
        # the ids written into the statement: a list handed over as a parameter costs ~2 ms to convert
        return scope.rows(f"SELECT o.row_id, {BRIEF_SQL if brief else RECORD_SQL + ', NULL, NULL'} "
                          f"FROM {scope.records_of(wanted, BRIEF if brief else None)} AS o")

    if scope.memo is None:
        return read(ids)
    kept: OrderedDict = scope.remember(("records", brief, *scope.view_key()), OrderedDict)
    with _KEEPING:
        known = [kept[r] for r in ids if r in kept]
    missing = [r for r in ids if r not in {row[0] for row in known}]
    fresh = read(missing) if missing else []
    with _KEEPING:
        for row in known + fresh:
            kept[row[0]] = row
            kept.move_to_end(row[0])
        while len(kept) > RECORDS_KEPT:
            kept.popitem(last=False)
    return known + fresh


def _row_weights(scope: ReadScope, row_ids: list[int]) -> dict[int, float]:
    """The feedback weight of each row of a page (1.0 without feedback)."""
    import numpy as np

    if not row_ids:
        return {}
    return dict(zip(row_ids, scope.row_weights(np.asarray(row_ids, dtype=np.int64)).tolist()))


def _text_page(scope: ReadScope, matching: str, params: list, request: QueryRequest,
               order: str) -> tuple[list[tuple[int, float | None]], int]:
    """BM25 over the matching observations (bm25.py), ranked by the score times the
    observation's feedback weight (1.0 without feedback) unless `unweighted`, ties in the
    default order. Only the rows that may reach the page (ranked at least as high as the
    page's last) are joined for that order."""
    import numpy as np

    from . import hints
    from .bm25 import Scored, filtered_rows
    from .context import lexical
    from .places import places

    text = request.text or ""
    scored = lexical(scope, filtered_rows(scope, matching, params), matching, params, text)
    total = len(scored.row_ids)
    end = request.offset + request.limit
    if request.offset >= total:
        return [], total
    weights = np.ones(total) if request.unweighted else scope.row_weights(scored.row_ids)
    # the hints (hints.py) multiply a score by at most `most`: a row whose score that many times
    # (and a rounding) ranks below the page's last before them cannot reach the page after them
    most = hints.most(text, request.rank_in_time, request.rank_about)
    maybe = np.arange(total)
    if total > end and not (weights < 0).any():
        ranking = scored.scores * weights
        bar = np.partition(ranking, total - end)[total - end]
        maybe = np.flatnonzero((scored.scores * most + 2e-6) * weights + 2e-6 >= bar)
    row_ids = scored.row_ids[maybe]
    scores = hints.hinted(scope, Scored(row_ids, scored.scores[maybe]), text, request.rank_in_time,
                          request.rank_about).scores
    ranking = scores * weights[maybe]
    count = len(maybe)
    reaching = np.arange(count) if count <= end else np.flatnonzero(ranking >= np.partition(ranking, count - end)[count - end])
    rank = places(scope, row_ids[reaching], order)  # only their places in the default order are read
    best = reaching[np.lexsort((rank, -ranking[reaching]))][request.offset:end]
    return [(int(row_id), float(score)) for row_id, score in zip(row_ids[best], scores[best])], total


def _iso(text: str) -> str:
    # strftime gives microseconds; records carry the canonical form (µs only when present)
    moment = datetime.fromisoformat(text).replace(tzinfo=timezone.utc)
    return format_timestamp(moment)


def _record(row: tuple, with_score: bool) -> dict[str, Any]:
    (obs_id, ts, type_, source, event, body, scope, entity, fields, priority, specificity, org, project, agent,
     user, classification, data, context, trace_ref, path, commit, score, _total) = row
    tenant = {k: v for k, v in (("org", org), ("project", project), ("agent", agent), ("user", user)) if v is not None}
    record = {
        "id": obs_id, "timestamp": _iso(ts), "type": type_, "source": source, "event": event, "body": body,
        "scope": list(scope), "entity": entity, "fields": _load(fields), "priority": priority,
        "specificity": specificity, "tenant": tenant or None, "classification": classification,
        "data": _load(data), "context": _load(context), "trace_ref": trace_ref, "path": path, "commit": commit,
    }
    if with_score:
        record["score"] = score
    return record


def _brief(row: tuple) -> dict[str, Any]:
    obs_id, ts, event, entity, commit = row
    return {"id": obs_id, "timestamp": _iso(ts), "event": event, "entity": entity, "commit": commit}


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)
