"""`obsrepo comprehensions` (docs/design.md §14): the beliefs of the indexed commit.

A comprehension document has no tenant of its own: a caller bound to a tenant, or reading
under a ceiling, sees a comprehension only when it can read every observation it cites."""

from __future__ import annotations

import json
from typing import Any

from ..errors import UsageError
from ..format.vocabulary import CONFIDENCES
from ..params import check_page
from .scope import ReadScope


def comprehensions(scope: ReadScope, domain: str | None = None, confidence: str | None = None, text: str | None = None,
                   limit: int = 50, offset: int = 0) -> dict[str, Any]:
    check_page(limit, offset)
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
