"""`obsrepo show ID`: one observation as a reviewer reads it."""

from __future__ import annotations

from typing import Any

from ..errors import NotFoundError
from ..format.document import read_document
from ..format.reduce import merge_map, retracted_ids, survivor
from .scope import ReadScope
from .snapshots import snapshot


def show(scope: ReadScope, observation_id: str) -> dict[str, Any]:
    row = scope.one(
        "SELECT o.path, o.blob, o.\"commit\", o.author, strftime(o.committed_at, '%Y-%m-%dT%H:%M:%SZ'), o.entity, "
        "o.corrects, o.retracts FROM visible AS o WHERE o.id = ?", [observation_id])
    if row is None:  # another tenant's id reads exactly like one that does not exist
        raise NotFoundError(f"observation '{observation_id}' does not exist", code="REF_NOT_FOUND", id=observation_id)
    path, blob, commit, author, committed_at, entity, corrects, retracts = row
    document = read_document(path, scope.blob(blob))
    front = dict(document.front or {})
    special = scope.special()
    gone = retracted_ids(special)
    result: dict[str, Any] = {
        "id": observation_id, "path": path, "commit": commit, "author": author, "committed_at": committed_at,
        "front_matter": front, "body": document.body.strip("\n"),
        "corrects": _targets(scope, list(corrects)), "retracts": _targets(scope, list(retracts)),
        "retracted_by": sorted(o.id for o in special if observation_id in o.retracts and o.id not in gone
                               and observation_id in gone),
        # what corrects it: the caller's observations that name it in `corrects` (docs/design.md §8b)
        "corrected_by": [r[0] for r in scope.rows("SELECT id FROM visible WHERE list_contains(corrects, ?) ORDER BY id",
                                                  [observation_id]) if r[0] not in gone],
        "entity_id": None, "wins": {}, "at_commit": scope.at_commit,
    }
    if entity:
        snap = snapshot(scope, entity)
        result["entity_id"] = survivor(entity, merge_map(special, gone))
        result["wins"] = {name: snap["snapshot"][name] for name, p in sorted(snap["provenance"].items())
                          if observation_id in (p if isinstance(p, list) else [p])}
        result["entity_deleted"] = snap["deleted"]
    return result


def _targets(scope: ReadScope, ids: list[str]) -> list[dict[str, Any]]:
    """What a correction or retraction names, as the scope sees it (an invisible id reads as missing)."""
    if not ids:
        return []
    found = {r[0]: r for r in scope.rows("SELECT id, entity, event, fields FROM visible WHERE id IN (SELECT unnest(?::VARCHAR[]))", [ids])}
    import json

    return [{"id": i, "exists": i in found, "entity": found[i][1] if i in found else None,
             "event": found[i][2] if i in found else None,
             "fields": json.loads(found[i][3]) if i in found and found[i][3] else {}} for i in ids]
