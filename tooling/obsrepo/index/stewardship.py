"""What stewardship documents change about the rows a reader sees (docs/design.md §14), as SQL
over any relation of observation rows (a table, a view or a parenthesised query):

- reclassify documents raise the classification of their targets (same tenant mapping,
  unless the reclassify document is itself retracted);
- retention policies (`schemas/retention.yaml` in the tree of the commit) expire rows whose
  timestamp + the shortest matching ttl is at or before the commit's committer time;
- a caller's ceiling leaves out rows classified above it.

`effective_relation` materialises the few rows that change (as temporary tables of the
connection) and returns the SQL of the effective relation: the same columns, `classification`
and `class_rank` raised. The index uses it for the stored weights at the indexed commit, the
read scope for every request, so both agree by construction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..format.retention import Policy
from ..format.vocabulary import CLASSIFICATION_RANK, CLASSIFICATIONS, RETENTION_PATH
from ..gitstore import Git

TENANT = ("tenant_org", "tenant_project", "tenant_agent", "tenant_user")
_SAME_TENANT = " AND ".join(f"{{a}}.{c} IS NOT DISTINCT FROM {{b}}.{c}" for c in TENANT)


def retracted_sql(relation: str) -> str:
    """Row ids of the rows of `relation` that a retraction in `relation` withdraws (same tenant mapping)."""
    same = _SAME_TENANT.format(a="g", b="o")
    return f"""SELECT DISTINCT o.row_id FROM {relation} AS o JOIN (
        SELECT unnest(r.retracts) AS target, {", ".join(f"r.{c}" for c in TENANT)} FROM {relation} AS r
        WHERE r.special AND len(r.retracts) > 0) AS g ON g.target = o.id AND {same}"""


def raised_sql(relation: str) -> str:
    """(row_id, rank) of the rows whose classification a reclassify document raises."""
    same = _SAME_TENANT.format(a="rc", b="o")
    return f"""WITH rc AS (
        SELECT r.reclassify_rank AS rank, unnest(r.reclassify_targets) AS target, {", ".join(f"r.{c}" for c in TENANT)}
        FROM {relation} AS r WHERE r.reclassify_rank IS NOT NULL AND r.row_id NOT IN ({retracted_sql(relation)}))
    SELECT o.row_id, max(rc.rank)::TINYINT AS rank FROM {relation} AS o JOIN rc ON rc.target = o.id AND {same}
    GROUP BY o.row_id, o.class_rank HAVING max(rc.rank) > o.class_rank"""


def _rank_expr(raised: str | None) -> str:
    return "o.class_rank" if raised is None else f"coalesce({raised}.rank, o.class_rank)"


def policy_condition(policy: Policy, rank: str) -> str:
    """SQL: the row (alias `o`, effective rank `rank`) matches the policy."""
    parts = []
    if policy.type is not None:
        parts.append("o.type = '" + policy.type.replace("'", "''") + "'")
    if policy.classification is not None:
        parts.append(f"{rank} = {CLASSIFICATION_RANK[policy.classification]}")
    return " AND ".join(parts) or "TRUE"


def expires_at_sql(policies: list[Policy], rank: str) -> str:
    """SQL: the moment the row expires (NULL: never), the shortest matching ttl."""
    if not policies:
        return "NULL::TIMESTAMP"
    cases = [f"CASE WHEN {policy_condition(p, rank)} THEN o.timestamp + INTERVAL {p.ttl_days} DAY END" for p in policies]
    return cases[0] if len(cases) == 1 else f"least({', '.join(cases)})"


_RETENTION: dict[str, list[Policy]] = {}


def retention_policies(git: Git, commit: str) -> list[Policy]:
    """The policies of `schemas/retention.yaml` in the tree of `commit` (none when the file is
    missing or invalid: `check` reports an invalid one). A commit's tree never changes."""
    if commit not in _RETENTION:
        from ..format.retention import read_retention

        raw = git.run("cat-file", "blob", f"{commit}:{RETENTION_PATH}", check=False)
        _RETENTION[commit] = (read_retention(RETENTION_PATH, raw)[0] or []) if raw else []
    return _RETENTION[commit]


def commit_moment(git: Git, con: Any, commit: str) -> datetime:
    """The committer time of `commit`, naive UTC (as TIMESTAMP columns hold it)."""
    row = con.execute("SELECT committed_at FROM commits WHERE sha = ?", [commit]).fetchone()
    if row is not None:
        return row[0]
    from ..times import commit_time

    return commit_time(git.committed_at(commit)).replace(tzinfo=None)


def effective_relation(con: Any, git: Git, commit: str, base: str, *, prefix: str, ceiling: str | None = None,
                       include_expired: bool = False) -> tuple[str, str | None, bool]:
    """The SQL of `base` as a caller sees it at `commit`: classifications raised, expired rows
    left out (unless `include_expired`), rows above `ceiling` left out. Temporary tables
    `<prefix>_raised` and `<prefix>_expired` hold what changes (only when something does);
    returns (the SQL, the name of the raised table or None, whether every row of `base` is
    kept: nothing expired, no ceiling below the top)."""
    raised, clauses = withheld(con, git, commit, base, prefix=prefix, ceiling=ceiling, include_expired=include_expired)
    return effective_sql(base, raised, clauses), raised, not clauses


def withheld(con: Any, git: Git, commit: str, base: str, *, prefix: str, ceiling: str | None = None,
             include_expired: bool = False, reclassified: Any = None) -> tuple[str | None, list[str]]:
    """What `effective_relation` changes about `base`: the name of the raised table (None when
    nothing is raised) and the conditions (over alias `o`: its `row_id` and `class_rank`) a
    row must meet to be seen. `reclassified(ask)`: whether any row of `base` is reclassified,
    `ask()` the look (a kept-open reader keeps its answer for the index generation)."""
    raised: str | None = None

    def ask() -> bool:
        return con.execute(f"SELECT 1 FROM {base} AS o WHERE o.reclassify_rank IS NOT NULL LIMIT 1").fetchone() is not None

    if reclassified(ask) if reclassified is not None else ask():
        raised = f"{prefix}_raised"
        con.execute(f"CREATE OR REPLACE TEMP TABLE {raised} AS {raised_sql(base)}")
        if not con.execute(f"SELECT 1 FROM {raised} LIMIT 1").fetchone():
            raised = None
    clauses = []
    policies = [] if include_expired else retention_policies(git, commit)
    if policies:
        moment = commit_moment(git, con, commit)
        join = f" LEFT JOIN {raised} USING (row_id)" if raised else ""
        expired = f"{prefix}_expired"
        con.execute(f"CREATE OR REPLACE TEMP TABLE {expired} AS SELECT o.row_id FROM {base} AS o{join} "
                    f"WHERE {expires_at_sql(policies, _rank_expr(raised))} <= ?", [moment])
        if con.execute(f"SELECT 1 FROM {expired} LIMIT 1").fetchone():
            clauses.append(f"o.row_id NOT IN (SELECT row_id FROM {expired})")
    if ceiling is not None and CLASSIFICATION_RANK[ceiling] < len(CLASSIFICATIONS) - 1:
        clauses.append(f"{_rank_expr(raised)} <= {CLASSIFICATION_RANK[ceiling]}")
    return raised, clauses


def above_ceiling_sql(base: str, raised: str | None, ceiling: str) -> str:
    """SQL (a relation `o` with a WHERE) of the rows of `base` whose effective classification
    (`raised`: `withheld`'s table) is above `ceiling`."""
    join = f" LEFT JOIN {raised} USING (row_id)" if raised else ""
    return f"{base} AS o{join} WHERE {_rank_expr(raised)} > {CLASSIFICATION_RANK[ceiling]}"


def effective_sql(base: str, raised: str | None, clauses: list[str]) -> str:
    """The SQL of `base` with `withheld`'s answer applied."""
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    if raised is None:
        return f"SELECT * FROM {base} AS o{where}"
    names = " ".join(f"WHEN {rank} THEN '{name}'" for rank, name in enumerate(CLASSIFICATIONS))
    return (f"SELECT o.* REPLACE ({_rank_expr(raised)} AS class_rank, CASE {_rank_expr(raised)} {names} END AS classification) "
            f"FROM {base} AS o LEFT JOIN {raised} USING (row_id){where}")
