"""`obsrepo retention` (docs/design.md §14): what the retention policies of a commit have
expired at that commit, and what expires next. Read with expired rows kept (the scope is
built with `include_expired`), classifications as reclassify documents raised them."""

from __future__ import annotations

from typing import Any

from ..index.columns import UTC_TEXT
from ..index.stewardship import commit_moment, expires_at_sql, retention_policies
from .scope import ReadScope


def retention(scope: ReadScope, limit: int = 50) -> dict[str, Any]:
    policies = retention_policies(scope.git, scope.at_commit)
    moment = commit_moment(scope.git, scope.con, scope.at_commit)
    result: dict[str, Any] = {"at_commit": scope.at_commit, "committed_at": moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
                              "policies": [p.as_dict() for p in policies],
                              "expired": [], "total_expired": 0, "upcoming": [], "total_upcoming": 0}
    if not policies:
        return result
    rows = f"""SELECT o.id, o.type, o.classification, {UTC_TEXT.format("o.timestamp")} AS ts, e.expires, o.path
        FROM (SELECT o.row_id, {expires_at_sql(policies, "o.class_rank")} AS expires FROM visible AS o) AS e
        JOIN visible AS o USING (row_id) WHERE e.expires IS NOT NULL"""
    for key, condition, order in (("expired", "expires <= ?", "expires, id"), ("upcoming", "expires > ?", "expires, id")):
        found = scope.rows(f"SELECT id, type, classification, ts, {UTC_TEXT.format('expires')}, path, count(*) OVER () "
                           f"FROM ({rows}) WHERE {condition} ORDER BY {order} LIMIT ?", [moment, limit])
        result[key] = [{"id": r[0], "type": r[1], "classification": r[2], "timestamp": r[3], "expires_at": r[4],
                        "path": r[5]} for r in found]
        result[f"total_{key}"] = found[0][6] if found else 0
    return result
