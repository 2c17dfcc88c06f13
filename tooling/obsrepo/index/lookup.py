"""The observations of an indexed tree that a change names, read from the index as the facts
the repository rules ask (`gate/change.py` `Context`): for the review of a change at any
commit (`read/diff_check.py`, through a read scope's `visible`) and for the watcher's drafts at
the indexed commit (`index/drafts.py`). One query per question, whatever the tree's size."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..gate.change import Context, Wanted
from ..params import TENANT_KEYS
from .columns import UTC_TEXT

Rows = Callable[[str, list[Any]], list[tuple[Any, ...]]]  # (statement, parameters) → rows

# a timestamp as `analyze` writes it in a document's facts (whole seconds without a fraction)
CANONICAL_TS = UTC_TEXT.format("o.timestamp")


def named_observations(rows: Rows, relation: str) -> Context:
    """The context of a change over the observations of `relation` (a table or view with the
    columns of `obs_versions`): those with a wanted id, content hash or entity, a relation of a
    wanted graph type or to a wanted target, and every one that retracts."""

    def context(wanted: Wanted, leave_out: set[str]) -> list[tuple[str, dict[str, Any]]]:
        found = rows(
            f"SELECT o.path, o.id, {CANONICAL_TS}, {', '.join(f'o.tenant_{key}' for key in TENANT_KEYS)}, "
            f"o.entity, o.corrects, o.retracts, o.relations, o.content_hash FROM {relation} AS o "
            "WHERE o.path NOT IN (SELECT unnest(?::VARCHAR[])) AND (len(o.retracts) > 0 "
            "OR o.id IN (SELECT unnest(?::VARCHAR[])) OR o.content_hash IN (SELECT unnest(?::VARCHAR[])) "
            "OR o.entity IN (SELECT unnest(?::VARCHAR[])) "
            "OR len(list_filter(o.relations, r -> list_contains(?::VARCHAR[], r.type))) > 0 "
            "OR len(list_filter(o.relations, r -> list_contains(?::VARCHAR[], r.target))) > 0)",
            [sorted(leave_out), sorted(wanted.ids), sorted(wanted.hashes), sorted(wanted.entities),
             sorted(wanted.graph_types), sorted(wanted.relation_targets)])
        documents = []
        for path, obs_id, ts, *rest in found:
            tenant = {k: v for k, v in zip(TENANT_KEYS, rest[:len(TENANT_KEYS)]) if v is not None}
            entity, corrects, retracts, relations, digest = rest[len(TENANT_KEYS):]
            documents.append((path, {
                "kind": "observation", "id": obs_id, "timestamp": ts, "tenant": tenant, "entity": entity,
                "corrects": list(corrects), "retracts": list(retracts),
                "relations": [[r["type"], r["target"]] for r in relations], "hash": digest, "loc": {},
            }))
        return documents

    return context
