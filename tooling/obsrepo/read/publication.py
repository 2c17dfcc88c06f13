"""The rows of publication (docs/design.md §16): what each commit of the first-parent chain
adds to the published tables, read through a `ReadScope` so that the binding, the ceiling and
retention apply exactly as they do to `query` and `snapshot`.

A commit's *state* is what a reader sees as of it: the ids `query` would list (retracted ones
left out) and every entity's snapshot. Publishing commit `s` after commit `s - 1` appends the
difference of the two states: the observations that appeared (`added_seq = s`) with their
fields and relations, the ones that went away (`removed_seq = s`), and the entities whose
snapshot changed (`from_seq = s`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..format.reduce import merge_map, retracted_ids, survivor
from ..index.reducer_rows import special_rows
from .scope import ReadScope, literal

# the published columns of an observation: lists stay lists, JSON values are JSON text
# (every engine reads a string; not every one reads a variant)
OBSERVATION = ("o.id, o.timestamp, o.source, o.type, o.event, o.body, o.scope, o.entity, o.entity_type, "
               "o.fields::VARCHAR AS fields, o.priority, o.classification, o.declared_classification, o.tenant_org, "
               "o.tenant_project, o.tenant_agent, o.tenant_user, o.source_ref, o.interpretation, o.data::VARCHAR AS data, "
               "o.context::VARCHAR AS context, o.trace_ref, o.corrects, o.retracts, o.content_hash, o.path, "
               'o."commit", o.author, o.committed_at')
SNAPSHOT_TYPES = "entity_id VARCHAR, from_seq INTEGER, snapshot VARCHAR, provenance VARCHAR, deleted BOOLEAN, merged_into VARCHAR"
# why an observation left the published view
RETRACTED, REBASED, WITHHELD = "retracted", "rebased", "withheld"


@dataclass
class State:
    """What a reader sees as of one commit: listed ids, retracted ids, entity → (snapshot,
    provenance, deleted, merged_into) with the JSON canonical, so equal means unchanged."""

    ids: set[str] = field(default_factory=set)
    retracted: set[str] = field(default_factory=set)
    entities: dict[str, tuple[str, str, bool, str | None]] = field(default_factory=dict)


def state(scope: ReadScope) -> State:
    from ..index.stewardship import retracted_sql
    from .snapshots import all_snapshots

    withdrawn = retracted_sql("visible")
    ids = {row[0] for row in scope.rows(f"SELECT id FROM visible WHERE row_id NOT IN ({withdrawn})")}
    retracted = {row[0] for row in scope.rows(f"SELECT id FROM visible WHERE row_id IN ({withdrawn})")}
    entities: dict[str, tuple[str, str, bool, str | None]] = {
        entity: (_canonical(snap["snapshot"]), _canonical(snap["provenance"]), bool(snap["deleted"]), None)
        for entity, snap in all_snapshots(scope).items()}
    special = special_rows(scope.con, "visible")
    merges = merge_map(special, retracted_ids(special))
    for entity in merges:
        entities[entity] = ("{}", "{}", False, survivor(entity, merges))
    return State(ids, retracted, entities)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _in(ids: set[str]) -> str:
    return "(SELECT unnest(" + ("[" + ", ".join(literal(i) for i in sorted(ids)) + "]" if ids else "[]::VARCHAR[]") + "))"


def additions(scope: ReadScope, repo: str, seq: int, ids: set[str]) -> dict[str, Any]:
    """The rows of `observations`, `observation_fields` and `relations` for the observations
    `ids` that appear at `seq` (Arrow tables, `repo` first)."""
    head = f"{literal(repo)} AS repo"
    chosen = f"o.id IN {_in(ids)}"
    return {
        "observations": _arrow(scope, f"SELECT {head}, {OBSERVATION}, {seq}::INTEGER AS added_seq FROM visible AS o "
                                      f"WHERE {chosen} ORDER BY o.id"),
        "observation_fields": _arrow(scope, f"SELECT {head}, o.id, o.entity AS entity_id, f.key AS field, "
                                            f"f.value::VARCHAR AS value_json, {seq}::INTEGER AS added_seq "
                                            "FROM visible AS o, json_each(o.fields) AS f "
                                            f"WHERE o.fields IS NOT NULL AND {chosen} ORDER BY o.id, f.key"),
        "relations": _arrow(scope, f"SELECT {head}, o.id AS observation_id, o.r.type AS type, o.entity AS source_entity_id, "
                                   f"o.r.target AS target_entity_id, {seq}::INTEGER AS added_seq FROM "
                                   f"(SELECT id, entity, unnest(relations) AS r FROM visible AS o WHERE {chosen}) AS o "
                                   "ORDER BY observation_id, type, target_entity_id"),
    }


def removals(scope: ReadScope, repo: str, seq: int, gone: dict[str, str]) -> Any:
    """`observation_removals` rows: id → reason."""
    values = ", ".join(f"({literal(i)}, {literal(reason)})" for i, reason in sorted(gone.items()))
    body = f"SELECT * FROM (VALUES {values}) AS g(id, reason)" if gone else "SELECT ''::VARCHAR AS id, ''::VARCHAR AS reason LIMIT 0"
    return _arrow(scope, f"SELECT {literal(repo)} AS repo, g.id, {seq}::INTEGER AS removed_seq, g.reason FROM ({body}) AS g ORDER BY g.id")


def snapshots(scope: ReadScope, repo: str, seq: int, changed: dict[str, tuple[str, str, bool, str | None]]) -> Any:
    """`entity_snapshots` rows of the entities whose snapshot changed at `seq`."""
    rows = [(entity, seq, snap, prov, deleted, merged) for entity, (snap, prov, deleted, merged) in sorted(changed.items())]
    scope.con.execute(f"CREATE OR REPLACE TEMP TABLE publication_snapshots ({SNAPSHOT_TYPES})")
    if rows:
        scope.con.executemany("INSERT INTO publication_snapshots VALUES (?, ?, ?, ?, ?, ?)", rows)
    return _arrow(scope, f"SELECT {literal(repo)} AS repo, * FROM publication_snapshots ORDER BY entity_id")


def _arrow(scope: ReadScope, sql: str) -> Any:
    return scope.con.execute(sql).fetch_arrow_table()


def repository_id(scope: ReadScope, root: str) -> str:
    """The repository's published name: its origin URL without credentials, else the id of its
    root commit (docs/design.md §16)."""
    url = scope.git.run("config", "--get", "remote.origin.url", check=False).decode("utf-8", "replace").strip()
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1", url) if url else root
