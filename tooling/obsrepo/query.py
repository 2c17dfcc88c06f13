"""Scoped queries over the index (DESIGN §6): filters, tenant binding, BM25 text, any commit.

Everything is read-only. Visibility at a commit on the indexed first-parent chain is a range
test on `added_seq`/`removed_seq`; any other commit (another branch, a newer commit) is that
of the nearest chain commit patched with the `git diff` between them (an "overlay").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from .errors import UsageError
from .gitstore import EMPTY_TREE, Git
from .index.schema import CLASSIFICATION_RANK, NOW, RECORD_COLUMNS
# parse_time, the one reader of time options, is re-exported for the readers' convenience
from .times import RANGE, TimeError, format_timestamp, parse_time, to_utc  # noqa: F401

MAX_LIMIT = 1000
K1, B = 1.2, 0.75
TOKENS = r"regexp_split_to_array(lower(strip_accents({})), '[^\p{{L}}\p{{N}}]+')"


@dataclass
class QueryRequest:
    scopes: tuple[str, ...] = ()
    type: str | None = None
    source: str | None = None
    after: datetime | None = None
    before: datetime | None = None
    entity: str | None = None
    tenant: dict[str, str] = field(default_factory=dict)
    max_classification: str | None = None
    text: str | None = None
    include_retracted: bool = False
    limit: int = 50
    offset: int = 0
    order: str = "desc"

    def validate(self) -> None:
        if not 1 <= self.limit <= MAX_LIMIT:
            raise UsageError(f"--limit must be between 1 and {MAX_LIMIT}", parameter="--limit")
        if self.offset < 0:
            raise UsageError("--offset must not be negative", parameter="--offset")
        if self.order not in ("asc", "desc"):
            raise UsageError("--order is asc or desc", parameter="--order")
        for name in ("after", "before"):
            moment = getattr(self, name)
            if moment is not None and (moment.tzinfo is None or not _in_range(moment)):
                raise UsageError(f"--{name} must be a timestamp with a timezone within {RANGE}", parameter=f"--{name}")
        if self.max_classification is not None and self.max_classification not in CLASSIFICATION_RANK:
            raise UsageError("--max-classification is public, internal, confidential or restricted",
                             parameter="--max-classification")


def _in_range(moment: datetime) -> bool:
    try:
        to_utc(moment)
    except TimeError:
        return False
    return True


def _naive_utc(moment: datetime) -> datetime:
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


@dataclass
class View:
    """Which rows are visible: the SQL of a relation equivalent to obs_versions, and params."""

    sql: str
    params: list[Any]
    terms_sql: str
    at_commit: str
    doclen_sql: str = "obs_doclen"
    records_sql: str = "obs_records"


def view_at(con: Any, git: Git, at_sha: str) -> View:
    """The observations present in the tree of commit `at_sha`."""
    seq_row = con.execute("SELECT seq FROM commits WHERE sha = ?", [at_sha]).fetchone()
    if seq_row is not None:
        seq = seq_row[0]
        return View("(SELECT * FROM obs_versions WHERE added_seq <= ? AND removed_seq > ?)", [seq, seq], "obs_terms", at_sha)
    return _overlay(con, git, at_sha)


OVERLAY_ROWS = -(2**40)  # overlay row ids never meet stored ones


def _overlay(con: Any, git: Git, at_sha: str) -> View:
    """A commit off the indexed chain: the nearest chain commit, patched with `git diff`."""
    from .index import history
    from .index.build import OBS_COLUMNS, index_terms, insert_rows, parse_blobs, rows_for
    from .sources import DOCUMENT_ROOTS

    indexed = con.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()[0]
    chain = dict(con.execute("SELECT sha, seq FROM commits").fetchall())
    base, seq = None, None
    common = git.run("merge-base", at_sha, indexed, check=False).decode().strip()
    if common:
        for candidate in git.run("rev-list", "--first-parent", common).decode().split():
            if candidate in chain:
                base, seq = candidate, chain[candidate]
                break
    changes = git.diff(base or EMPTY_TREE, at_sha, "--", *DOCUMENT_ROOTS)
    removed = sorted({c.path for c in changes if c.status in ("D", "M", "T")})
    added = sorted((c.path, c.new_sha) for c in changes
                   if c.status in ("A", "M", "T") and c.new_mode in ("100644", "100755") and c.path.startswith("observations/"))
    authors = history.authored(git, base, at_sha) if added else {}
    info = history.commit_info(git, [at_sha, *authors.values()])
    files = [(path, blob, seq or 0, authors.get((path, blob), at_sha)) for path, blob in added]
    obs_rows, _comp, _problems, _issues = rows_for(files, parse_blobs(git, added), OVERLAY_ROWS, info)
    con.execute("CREATE OR REPLACE TEMP TABLE overlay_obs AS SELECT * FROM obs_versions LIMIT 0")
    con.execute("CREATE OR REPLACE TEMP TABLE overlay_terms AS SELECT * FROM obs_terms LIMIT 0")
    con.execute("CREATE OR REPLACE TEMP TABLE overlay_doclen AS SELECT * FROM obs_doclen LIMIT 0")
    con.execute("CREATE OR REPLACE TEMP TABLE overlay_removed (path VARCHAR)")
    if obs_rows:
        insert_rows(con, "overlay_obs", OBS_COLUMNS, obs_rows)
        index_terms(con, "overlay_obs", "overlay_terms", OVERLAY_ROWS)
    if removed:
        con.executemany("INSERT INTO overlay_removed VALUES (?)", [(p,) for p in removed])
    if seq is None:
        return View("(SELECT * FROM overlay_obs)", [], "overlay_terms", at_sha, "overlay_doclen", "overlay_obs")
    sql = ("(SELECT * FROM obs_versions WHERE added_seq <= ? AND removed_seq > ? "
           "AND path NOT IN (SELECT path FROM overlay_removed) UNION ALL SELECT * FROM overlay_obs)")
    return View(sql, [seq, seq], "(SELECT * FROM obs_terms UNION ALL SELECT * FROM overlay_terms)", at_sha,
                "(SELECT * FROM obs_doclen UNION ALL SELECT * FROM overlay_doclen)",
                f"(SELECT row_id, {RECORD_COLUMNS} FROM obs_records UNION ALL SELECT row_id, {RECORD_COLUMNS} FROM overlay_obs)")


_TENANT_COLUMNS = {"org": "tenant_org", "project": "tenant_project", "agent": "tenant_agent", "user": "tenant_user"}


def tenant_filter(binding: dict[str, str], alias: str = "o") -> tuple[str, list[Any]]:
    """Fail closed: an observation without a bound key is invisible to a bound caller."""
    clauses = [f"{alias}.{_TENANT_COLUMNS[k]} = ?" for k in sorted(binding)]
    return (" AND ".join(clauses) if clauses else "TRUE"), [binding[k] for k in sorted(binding)]


def _filters(request: QueryRequest) -> tuple[str, list[Any]]:
    where, params = tenant_filter(request.tenant)
    clauses = [where]
    if request.scopes:  # list_contains is cheaper than list_has_any
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
    if request.entity is not None:
        clauses.append("o.entity = ?")
        params.append(request.entity)
    if request.max_classification is not None:
        clauses.append("o.class_rank <= ?")
        params.append(CLASSIFICATION_RANK[request.max_classification])
    return " AND ".join(clauses), params


RECORD_SQL = """o.id, strftime(o.timestamp, '%Y-%m-%dT%H:%M:%S.%f') AS ts, o.type, o.source, o.event, o.body,
    o.scope, o.entity, o.fields, o.priority, o.specificity, o.tenant_org, o.tenant_project, o.tenant_agent,
    o.tenant_user, o.classification, o.data, o.context, o.trace_ref, o.path, o."commit\""""


def run_query(con: Any, view: View, request: QueryRequest) -> dict[str, Any]:
    """One page of observations. The filters run over narrow columns only (row id, timestamp,
    id): the page's records are fetched afterwards, so a query costs the same whatever the
    size of the bodies it skips."""
    request.validate()
    where, params = _filters(request)
    if not request.include_retracted:
        hidden = retracted_rows(con, view)
        if hidden:
            where += " AND NOT list_contains(?::BIGINT[], o.row_id)"
            params.append(hidden)
    visible = f"{view.sql} AS o"
    direction = "DESC" if request.order == "desc" else "ASC"
    order = f"timestamp {direction}, id {direction}"
    matching = f"SELECT o.row_id, o.timestamp, o.id FROM {visible} WHERE {where}"
    if request.text:
        page, total = _text_page(con, view, matching, view.params + params, request, order)
    else:
        rows = con.execute(f"SELECT row_id, count(*) OVER () FROM ({matching}) ORDER BY {order} LIMIT ? OFFSET ?",
                           view.params + params + [request.limit, request.offset]).fetchall()
        page = [(row_id, None) for row_id, _ in rows]
        if rows:
            total = rows[0][1]
        else:  # past the last page
            total = con.execute(f"SELECT count(*) FROM ({matching})", view.params + params).fetchone()[0]
    records = fetch_records(con, view, [row_id for row_id, _ in page])
    observations = []
    for row_id, score in page:
        record = records[row_id]
        if request.text:
            record["score"] = score
        observations.append(record)
    return {
        "observations": observations,
        "total": total,
        "limit": request.limit,
        "offset": request.offset,
        "at_commit": view.at_commit,
    }


def retracted_rows(con: Any, view: View) -> list[int]:
    """Row ids of the visible observations that a visible retraction in the same tenant
    mapping retracts (sorted)."""
    same_tenant = " AND ".join(f"g.{c} IS NOT DISTINCT FROM o.{c}" for c in _TENANT_COLUMNS.values())
    sql = f"""
    WITH g AS (SELECT unnest(r.retracts) AS target, {", ".join(f"r.{c}" for c in _TENANT_COLUMNS.values())}
               FROM {view.sql} AS r WHERE r.special AND len(r.retracts) > 0)
    SELECT DISTINCT o.row_id FROM {view.sql} AS o JOIN g ON g.target = o.id AND {same_tenant} ORDER BY 1
    """
    return [row[0] for row in con.execute(sql, view.params + view.params).fetchall()]


def fetch_records(con: Any, view: View, row_ids: list[int]) -> dict[int, dict[str, Any]]:
    if not row_ids:
        return {}
    rows = con.execute(f"SELECT o.row_id, {RECORD_SQL}, NULL, NULL FROM {view.records_sql} AS o "
                       "WHERE o.row_id BETWEEN ? AND ? AND list_contains(?::BIGINT[], o.row_id)",
                       [min(row_ids), max(row_ids), row_ids]).fetchall()
    return {row[0]: _record(row[1:], False) for row in rows}


def _text_page(con: Any, view: View, matching: str, params: list, request: QueryRequest,
               order: str) -> tuple[list[tuple[int, float]], int]:
    """BM25 over the matching observations: N and the mean length are theirs, so another
    tenant's documents (or any filtered-out ones) never change a score."""
    tokens = TOKENS.format("?")
    sql = f"""
    WITH v AS ({matching}),
    q AS (SELECT DISTINCT stem(t, 'porter') AS term FROM (SELECT unnest({tokens}) AS t) WHERE t <> ''),
    lens AS (SELECT v.row_id, coalesce(d.doc_len, 0) AS doc_len FROM v LEFT JOIN {view.doclen_sql} AS d USING (row_id)),
    stats AS (SELECT count(*) AS n, coalesce(avg(doc_len), 0) AS avgdl FROM lens),
    hits AS (SELECT t.row_id, t.term, t.tf, l.doc_len FROM {view.terms_sql} AS t JOIN q USING (term) JOIN lens l USING (row_id)),
    df AS (SELECT term, count(*) AS df FROM hits GROUP BY term),
    scored AS (
        SELECT h.row_id, round(sum(ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))
               * h.tf * {K1 + 1} / (h.tf + {K1} * (1 - {B} + {B} * h.doc_len / greatest(stats.avgdl, 1)))), 6) AS score
        FROM hits h JOIN df USING (term), stats GROUP BY h.row_id
    ),
    ranked AS (SELECT s.row_id, s.score, v.timestamp, v.id FROM scored s JOIN v USING (row_id))
    SELECT row_id, score, (SELECT count(*) FROM ranked) FROM ranked ORDER BY score DESC, {order} LIMIT ? OFFSET ?
    """
    rows = con.execute(sql, params + [request.text, request.limit, request.offset]).fetchall()
    if rows:
        return [(row_id, score) for row_id, score, _ in rows], rows[0][2]
    count = sql.rsplit("SELECT row_id", 1)[0] + "SELECT count(*) FROM ranked"
    return [], con.execute(count, params + [request.text]).fetchone()[0]


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


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)
