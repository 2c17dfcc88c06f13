"""What the inspector's home page says of the repository at one commit (docs/design.md §17),
through the read scope, so a bound caller's counts and commits are those of what it can read
(§8b): nothing of another tenant's, or of what lies above its ceiling, is counted or listed.

    observations   visible: the rows the caller may read at the commit (its tenant, under its
                   ceiling, stewardship applied); retracted: those of them a retraction
                   withdraws; listed: the rest, what a search lists; expired: the caller's rows
                   retention withholds (None under a ceiling: counting them would count what
                   lies above it)
    commits        the latest commits of the indexed chain, up to the commit, that added or
                   removed a document the caller may read (an observation of its tenant under
                   its ceiling; a comprehension whose cited observations it can all read now),
                   with how many of each
"""

from __future__ import annotations

from typing import Any

from ..format.vocabulary import CLASSIFICATION_RANK
from .query import retracted_rows
from .scope import ReadScope


def overview(scope: ReadScope, recent: int) -> dict[str, Any]:
    visible = scope.one("SELECT count(*) FROM visible")[0]
    retracted = len(retracted_rows(scope))
    expired = None
    if scope.ceiling is None:  # only retention withholds rows of the commit from this caller
        expired = scope.one("SELECT count(*) FROM visible_all")[0] - visible
    return {"observations": {"visible": visible, "retracted": retracted, "listed": visible - retracted,
                             "expired": expired},
            "commits": _commits(scope, recent), "at_commit": scope.at_commit}


def _commits(scope: ReadScope, recent: int) -> list[dict[str, Any]]:
    seq_row = scope.one("SELECT seq FROM commits WHERE sha = ?", [scope.at_commit])
    if seq_row is None:  # a commit off the indexed chain: its chain is not indexed
        return []
    seq = int(seq_row[0])
    readable = "TRUE"
    if scope.ceiling is not None:  # declared, and as raised at the commit (scope.raised: row_id, rank)
        rank = CLASSIFICATION_RANK[scope.ceiling]
        readable = f"o.class_rank <= {rank}"
        if scope.raised is not None:
            readable += f" AND o.row_id NOT IN (SELECT row_id FROM {scope.raised} WHERE rank > {rank})"
    beliefs = "TRUE"
    if scope.tenant or scope.ceiling is not None:
        beliefs = "list_has_all((SELECT list(id) FROM visible), c.observations)"
    # obs_versions is the caller's: a bound scope shadows it with the tenant clause (scope.py)
    changes = f"""
        SELECT added_seq AS seq, 1 AS added, 0 AS removed FROM obs_versions AS o WHERE added_seq <= {seq} AND {readable}
        UNION ALL SELECT removed_seq, 0, 1 FROM obs_versions AS o WHERE removed_seq <= {seq} AND {readable}
        UNION ALL SELECT added_seq, 1, 0 FROM comp_versions AS c WHERE added_seq <= {seq} AND {beliefs}
        UNION ALL SELECT removed_seq, 0, 1 FROM comp_versions AS c WHERE removed_seq <= {seq} AND {beliefs}"""
    first = scope.one("SELECT min(seq) FROM commits")[0]
    rows = scope.rows(
        "SELECT k.seq, k.sha, strftime(k.committed_at, '%Y-%m-%dT%H:%M:%SZ'), k.author, sum(x.added)::INTEGER, "
        f"sum(x.removed)::INTEGER FROM ({changes}) AS x JOIN commits AS k USING (seq) "
        "GROUP BY ALL ORDER BY k.seq DESC LIMIT ?", [recent])
    return [{"commit": sha, "committed_at": at, "author": author, "added": added, "removed": removed,
             "first": number == first} for number, sha, at, author, added, removed in rows]
