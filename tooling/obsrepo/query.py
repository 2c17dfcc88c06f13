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
from .index.schema import CLASSIFICATION_RANK, NOW
from .times import format_timestamp

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
        if self.max_classification is not None and self.max_classification not in CLASSIFICATION_RANK:
            raise UsageError("--max-classification is public, internal, confidential or restricted",
                             parameter="--max-classification")


def parse_time(value: str, parameter: str) -> datetime:
    """ISO 8601 with a timezone, or a date (midnight UTC)."""
    text = value.strip()
    try:
        if len(text) == 10:
            return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{parameter} expects an ISO 8601 date or timestamp, got '{value}'", parameter=parameter) from None
    if moment.tzinfo is None:
        raise UsageError(f"{parameter} needs a timezone (Z or ±HH:MM): '{value}'", parameter=parameter)
    return moment


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
        return View("(SELECT * FROM overlay_obs)", [], "overlay_terms", at_sha, "overlay_doclen")
    sql = ("(SELECT * FROM obs_versions WHERE added_seq <= ? AND removed_seq > ? "
           "AND path NOT IN (SELECT path FROM overlay_removed) UNION ALL SELECT * FROM overlay_obs)")
    return View(sql, [seq, seq], "(SELECT * FROM obs_terms UNION ALL SELECT * FROM overlay_terms)", at_sha,
                "(SELECT * FROM obs_doclen UNION ALL SELECT * FROM overlay_doclen)")


_TENANT_COLUMNS = {"org": "tenant_org", "project": "tenant_project", "agent": "tenant_agent", "user": "tenant_user"}


def tenant_filter(binding: dict[str, str], alias: str = "o") -> tuple[str, list[Any]]:
    """Fail closed: an observation without a bound key is invisible to a bound caller."""
    clauses = [f"{alias}.{_TENANT_COLUMNS[k]} = ?" for k in sorted(binding)]
    return (" AND ".join(clauses) if clauses else "TRUE"), [binding[k] for k in sorted(binding)]


def _filters(request: QueryRequest) -> tuple[str, list[Any]]:
    where, params = tenant_filter(request.tenant)
    clauses = [where]
    if request.scopes:
        clauses.append("list_has_any(o.scope, ?::VARCHAR[])")
        params.append(list(request.scopes))
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
    request.validate()
    where, params = _filters(request)
    visible = f"{view.sql} AS o"
    retracted = ""
    if not request.include_retracted:
        # a retraction counts only within its own tenant mapping
        retracted = (f" AND NOT EXISTS (SELECT 1 FROM {view.sql} AS r WHERE len(r.retracts) > 0 "
                     "AND list_contains(r.retracts, o.id) AND r.tenant_org IS NOT DISTINCT FROM o.tenant_org "
                     "AND r.tenant_project IS NOT DISTINCT FROM o.tenant_project "
                     "AND r.tenant_agent IS NOT DISTINCT FROM o.tenant_agent "
                     "AND r.tenant_user IS NOT DISTINCT FROM o.tenant_user)")
    base_params = view.params + params + (view.params if retracted else [])
    direction = "DESC" if request.order == "desc" else "ASC"
    order = f"o.timestamp {direction}, o.id {direction}"
    if request.text:
        sql, all_params = _text_sql(view, visible, where, retracted, base_params, request, order)
    else:
        sql = (f"SELECT {RECORD_SQL}, NULL AS score, count(*) OVER () AS total FROM {visible} "
               f"WHERE {where}{retracted} ORDER BY {order} LIMIT ? OFFSET ?")
        all_params = base_params + [request.limit, request.offset]
    rows = con.execute(sql, all_params).fetchall()
    total = rows[0][-1] if rows else _count(con, visible, where, retracted, base_params, request, view)
    return {
        "observations": [_record(row, request.text is not None) for row in rows],
        "total": total,
        "limit": request.limit,
        "offset": request.offset,
        "at_commit": view.at_commit,
    }


def _text_sql(view: View, visible: str, where: str, retracted: str, base_params: list, request: QueryRequest,
              order: str) -> tuple[str, list]:
    tokens = TOKENS.format("?")
    sql = f"""
    WITH v AS (SELECT o.* FROM {visible} WHERE {where}{retracted}),
    q AS (SELECT DISTINCT stem(t, 'porter') AS term FROM (SELECT unnest({tokens}) AS t) WHERE t <> ''),
    lens AS (SELECT d.row_id, d.doc_len FROM {view.doclen_sql} AS d JOIN v USING (row_id)),
    stats AS (SELECT count(*) AS n, coalesce(avg(doc_len), 0) AS avgdl FROM (SELECT v.row_id, coalesce(l.doc_len, 0) AS doc_len FROM v LEFT JOIN lens l USING (row_id))),
    hits AS (SELECT t.row_id, t.term, t.tf, l.doc_len FROM {view.terms_sql} AS t JOIN q USING (term) JOIN lens l USING (row_id)),
    df AS (SELECT term, count(*) AS df FROM hits GROUP BY term),
    scored AS (
        SELECT h.row_id, round(sum(ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))
               * h.tf * {K1 + 1} / (h.tf + {K1} * (1 - {B} + {B} * h.doc_len / greatest(stats.avgdl, 1)))), 6) AS score
        FROM hits h JOIN df USING (term), stats GROUP BY h.row_id
    )
    SELECT {RECORD_SQL}, s.score, count(*) OVER () AS total
    FROM scored s JOIN v AS o USING (row_id)
    ORDER BY s.score DESC, {order} LIMIT ? OFFSET ?
    """
    return sql, base_params + [request.text, request.limit, request.offset]


def _count(con: Any, visible: str, where: str, retracted: str, base_params: list, request: QueryRequest, view: View) -> int:
    if request.offset == 0:
        return 0
    if request.text:
        sql, params = _text_sql(view, visible, where, retracted, base_params, request, "o.id")
        return con.execute(f"SELECT count(*) FROM ({sql.rsplit('LIMIT', 1)[0]})", params[:-2]).fetchone()[0]
    return con.execute(f"SELECT count(*) FROM {visible} WHERE {where}{retracted}", base_params).fetchone()[0]


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
