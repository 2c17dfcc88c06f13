"""`obsrepo comprehensions` (docs/design.md §14): the beliefs of the indexed commit.

A comprehension document has no tenant of its own: a caller bound to a tenant, or reading
under a ceiling, sees a comprehension only when it can read every observation it cites."""

from __future__ import annotations

import json
from typing import Any

from ..errors import NotFoundError, UsageError
from ..format.vocabulary import CONFIDENCES
from .scope import ReadScope


def comprehensions(scope: ReadScope, domain: str | None = None, confidence: str | None = None, text: str | None = None,
                   limit: int = 50, offset: int = 0) -> dict[str, Any]:
    if confidence is not None and confidence not in CONFIDENCES:
        raise UsageError(f"confidence is one of {', '.join(CONFIDENCES)}", parameter="confidence")
    seq = scope.one("SELECT seq FROM commits WHERE sha = ?", [scope.at_commit])
    if seq is None:
        raise UsageError("comprehensions are listed at commits of the indexed branch", parameter="at")
    clauses = [f"c.added_seq <= {int(seq[0])} AND c.removed_seq > {int(seq[0])}"]
    params: list[Any] = []
    if domain is not None:
        clauses.append("c.domain = ?")
        params.append(domain)
    if confidence is not None:
        clauses.append("json_extract_string(c.posterior, '$.confidence') = ?")
        params.append(confidence)
    for word in (text or "").split():
        clauses.append("strpos(lower(c.topic || ' ' || json_extract_string(c.prior, '$.statement') || ' ' "
                       "|| json_extract_string(c.posterior, '$.statement') || ' ' || c.body), ?) > 0")
        params.append(word.lower())
    if scope.tenant or scope.ceiling is not None:
        clauses.append("list_has_all((SELECT list(id) FROM visible), c.observations)")
    rows = scope.rows(
        "SELECT c.id, c.topic, c.domain, c.version, c.verified, strftime(c.updated, '%Y-%m-%dT%H:%M:%SZ'), c.prior, "
        "c.posterior, c.observations, c.path, count(*) OVER () FROM comp_versions AS c "
        f"WHERE {' AND '.join(clauses)} ORDER BY c.id LIMIT ? OFFSET ?", params + [limit, offset])
    items = []
    for cid, topic, dom, version, verified, updated, prior, posterior, cited, path, _ in rows:
        prior, posterior = json.loads(prior), json.loads(posterior)
        items.append({"id": cid, "topic": topic, "domain": dom, "version": version, "verified": verified,
                      "updated": updated, "prior_confidence": prior["confidence"], "confidence": posterior["confidence"],
                      "statement": posterior["statement"], "observations": list(cited), "path": path})
    total = rows[0][10] if rows else 0
    return {"comprehensions": items, "total": total, "limit": limit, "offset": offset}


def belief(scope: ReadScope, comprehension_id: str) -> dict[str, Any]:
    """One belief as a person reads it (the inspector's comprehension page, docs/design.md §17):
    the document at the scope's commit, the observations it cites (those it used marked), and
    its confidence version by version up to that commit. Hidden exactly like a missing one when
    the caller cannot read every observation it cites; a bound caller's history holds only the
    versions whose every cited observation it can read at that commit (one cited since removed
    from the tree cannot be judged, so it hides its version: fail closed)."""
    seq = scope.one("SELECT seq FROM commits WHERE sha = ?", [scope.at_commit])
    if seq is None:
        raise UsageError("beliefs are shown at commits of the indexed branch", parameter="at")
    rows = scope.rows(
        "SELECT c.version, c.topic, c.domain, c.verified, strftime(c.created, '%Y-%m-%dT%H:%M:%SZ'), "
        "strftime(c.updated, '%Y-%m-%dT%H:%M:%SZ'), c.prior, c.posterior, c.observations, c.observations_used, c.body, "
        "c.path, c.\"commit\", c.author, strftime(c.committed_at, '%Y-%m-%dT%H:%M:%SZ'), c.removed_seq > ? "
        "FROM comp_versions AS c WHERE c.id = ? AND c.added_seq <= ? ORDER BY c.added_seq, c.version",
        [int(seq[0]), comprehension_id, int(seq[0])])
    if scope.tenant or scope.ceiling is not None:
        # each version judged by what it cited (docs/design.md §8b): an earlier version, or an
        # earlier document of the same id, that cited what the caller cannot read is not shown
        cited = sorted({i for row in rows for i in row[8]})
        seen = {r[0] for r in scope.rows("SELECT DISTINCT id FROM visible WHERE id IN (SELECT unnest(?::VARCHAR[]))",
                                         [cited])} if cited else set()
        rows = [row for row in rows if seen.issuperset(row[8])]
    current = rows[-1] if rows and rows[-1][15] else None
    if current is None:  # a belief the caller may not read reads exactly like one that does not exist
        raise NotFoundError(f"comprehension '{comprehension_id}' does not exist", code="REF_NOT_FOUND", id=comprehension_id)
    (version, topic, domain, verified, created, updated, prior, posterior, cited, used, body, path, commit, author,
     committed_at, _) = current
    found = {r[0]: r for r in scope.rows(
        "SELECT id, strftime(timestamp, '%Y-%m-%dT%H:%M:%SZ'), event, entity FROM visible "
        "WHERE id IN (SELECT unnest(?::VARCHAR[]))", [list(cited)])}
    observations = [{"id": i, "used": i in used, "exists": i in found, "timestamp": found[i][1] if i in found else None,
                     "event": found[i][2] if i in found else None, "entity": found[i][3] if i in found else None}
                    for i in cited]
    history = []
    for row in rows:
        then_prior, then_posterior = json.loads(row[6]), json.loads(row[7])
        history.append({"version": row[0], "prior_confidence": then_prior["confidence"],
                        "confidence": then_posterior["confidence"], "statement": then_posterior["statement"],
                        "updated": row[5], "commit": row[12], "author": row[13], "committed_at": row[14]})
    return {"id": comprehension_id, "topic": topic, "domain": domain, "version": version, "verified": verified,
            "created": created, "updated": updated, "prior": json.loads(prior), "posterior": json.loads(posterior),
            "body": body, "path": path, "commit": commit, "author": author, "committed_at": committed_at,
            "observations": observations, "history": history, "at_commit": scope.at_commit}
