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
from ..index.stewardship import retracted_sql
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


Snapshot = tuple[str, str, bool, "str | None"]  # (snapshot, provenance, deleted, merged_into), JSON canonical
ABSENT = None  # an entity with no snapshot at the commit


@dataclass
class State:
    """What a reader sees as of one commit: listed ids with their entity, retracted ids, the
    merges, the tree of the entity schemas (the policies), and the snapshots known so far
    (entity → Snapshot, or ABSENT; every entity when `complete`). Snapshots are reduced only
    for the entities a commit touches: reducing every entity at every commit of a long
    history is what made a first publication slow."""

    ids: set[str] = field(default_factory=set)
    retracted: set[str] = field(default_factory=set)
    entity_of: dict[str, str | None] = field(default_factory=dict)
    merges: dict[str, str] = field(default_factory=dict)
    schemas: str = ""
    snapshots: dict[str, Snapshot | None] = field(default_factory=dict)
    complete: bool = True  # the empty state before the first commit knows every entity: there is none


def state(scope: ReadScope) -> State:
    """The ids, entities, retractions and merges as of the scope's commit; no snapshot yet."""
    from ..format.vocabulary import ENTITY_SCHEMAS_DIR

    withdrawn = retracted_sql("visible")
    ids, retracted, entity_of = set[str](), set[str](), dict[str, str | None]()
    for obs_id, entity, gone in scope.rows(f"SELECT id, entity, row_id IN ({withdrawn}) FROM visible"):
        if gone:
            retracted.add(obs_id)
        else:
            ids.add(obs_id)
            entity_of[obs_id] = entity
    special = special_rows(scope.con, "visible")
    merges = merge_map(special, retracted_ids(special))
    schemas = scope.git.run("ls-tree", scope.at_commit, ENTITY_SCHEMAS_DIR, check=False).decode("utf-8", "replace")
    return State(ids, retracted, entity_of, merges, schemas, complete=False)


def touched(before: State, after: State) -> set[str] | None:
    """The entities whose snapshot may differ between two states, or None for every entity
    (the policies changed). An entity's snapshot depends on its family's visible rows (its
    own and those merged into it), the retractions among them, and its type's policies."""
    if before.schemas != after.schemas and (before.ids or before.schemas):
        return None
    changed = before.ids ^ after.ids
    entities = {before.entity_of.get(i) or after.entity_of.get(i) for i in changed}
    entities |= {e for e in before.merges.keys() | after.merges.keys() if before.merges.get(e) != after.merges.get(e)}
    entities.discard(None)
    # a family reduces as one: every member of a family one of them belongs to, before and after
    for merges in (before.merges, after.merges):
        survivors = {survivor(e, merges) for e in entities if e}
        entities |= survivors | {e for e in merges if survivor(e, merges) in survivors}
    return {e for e in entities if e}


def snapshots_of(scope: ReadScope, st: State, entities: set[str] | None) -> dict[str, Snapshot | None]:
    """The snapshots of `entities` (None: every entity) as of the scope's commit, whose
    state is `st`: reduced in SQL over their families' rows; an entity merged away is
    ("{}", "{}", False, its survivor)."""
    from ..index.reducer_rows import CANDIDATES, all_policies
    from ..index.sqlreduce import reduce_all

    if entities is None:
        where, params, wanted = "TRUE", [], None
    else:
        survivors = {survivor(e, st.merges) for e in entities}
        family = sorted(survivors | {e for e in st.merges if survivor(e, st.merges) in survivors} | entities)
        where, params, wanted = "o.entity IN (SELECT unnest(?::VARCHAR[]))", [family], entities
    reduced = reduce_all(scope.con, CANDIDATES.format(relation="visible", where=where), params,
                         special_rows(scope.con, "visible"), all_policies(scope.git, scope.at_commit),
                         at_commit=scope.at_commit) if wanted is None or wanted else {}
    out: dict[str, Snapshot | None] = {
        entity: (_canonical(snap["snapshot"]), _canonical(snap["provenance"]), bool(snap["deleted"]), None)
        for entity, snap in reduced.items() if wanted is None or entity in wanted}
    for entity in st.merges if wanted is None else wanted & st.merges.keys():
        out[entity] = ("{}", "{}", False, survivor(entity, st.merges))
    if wanted is not None:
        out.update({entity: ABSENT for entity in wanted - out.keys()})
    return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _in(ids: set[str]) -> str:
    return "(SELECT unnest(" + ("[" + ", ".join(literal(i) for i in sorted(ids)) + "]" if ids else "[]::VARCHAR[]") + "))"


def additions(scope: ReadScope, repo: str, seq: int, ids: set[str]) -> dict[str, Any]:
    """The rows of `observations`, `observation_fields` and `relations` for the observations
    `ids` that appear at `seq` (Arrow tables, `repo` first); `visible` is read once."""
    head = f"{literal(repo)} AS repo"
    scope.con.execute(f"CREATE OR REPLACE TEMP TABLE publication_added AS SELECT * FROM visible AS o WHERE o.id IN {_in(ids)}")
    return {
        "observations": _arrow(scope, f"SELECT {head}, {OBSERVATION}, {seq}::INTEGER AS added_seq FROM publication_added AS o "
                                      "ORDER BY o.id"),
        "observation_fields": _arrow(scope, f"SELECT {head}, o.id, o.entity AS entity_id, f.key AS field, "
                                            f"f.value::VARCHAR AS value_json, {seq}::INTEGER AS added_seq "
                                            "FROM publication_added AS o, json_each(o.fields) AS f "
                                            "WHERE o.fields IS NOT NULL ORDER BY o.id, f.key"),
        "relations": _arrow(scope, f"SELECT {head}, o.id AS observation_id, o.r.type AS type, o.entity AS source_entity_id, "
                                   f"o.r.target AS target_entity_id, {seq}::INTEGER AS added_seq FROM "
                                   "(SELECT id, entity, unnest(relations) AS r FROM publication_added) AS o "
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
