"""The rows of publication (docs/design.md §16): what each commit of the first-parent chain
adds to the published tables, read through a `ReadScope` so that the binding, the ceiling and
retention apply exactly as they do to `query` and `snapshot`.

A commit's *state* is what a reader sees as of it: the ids `query` would list (retracted ones
left out) and every entity's snapshot. Publishing commit `s` after commit `s - 1` appends the
difference of the two states, read as one (`step`: only the ids the commit changes reach
Python, and only the entities it touches are reduced): the observations that appeared
(`added_seq = s`) with their fields and relations, the ones that went away (`removed_seq =
s`), and the entities whose snapshot changed (`from_seq = s`).
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
# why an observation left the published view
RETRACTED, REBASED, WITHHELD = "retracted", "rebased", "withheld"


Snapshot = tuple[str, str, bool, "str | None"]  # (snapshot, provenance, deleted, merged_into), JSON canonical
ABSENT = None  # an entity with no snapshot at the commit


@dataclass
class State:
    """What a reader sees as of one commit, as far as publishing needs it in Python: whether
    it lists any observation, the retracted ids, the merges and the tree of the entity schemas
    (the policies). The listed ids themselves stay in DuckDB (`publication_kept`, with `kept`):
    a commit after it is compared there, so only the few ids it changes reach Python, not
    every visible row of both commits."""

    listed: bool = False
    retracted: set[str] = field(default_factory=set)
    merges: dict[str, str] = field(default_factory=dict)
    schemas: str = ""
    kept: bool = False  # its rows are the scope's `publication_kept` (the state computed last)
    only: str = ""  # SQL of the ids that may change (`changing`); the others are not kept: "" keeps all


@dataclass
class Change:
    """What one commit changed of the listed ids: the ones that appeared (with their rows in
    `visible`), the ones that left, and the entities of both."""

    appeared: dict[str, list[int]] = field(default_factory=dict)
    left: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)
    # retracted before, and no longer seen at all (expired, raised above the ceiling): a
    # removal of theirs is published, and must leave with their rows if the head withholds them
    vanished: set[str] = field(default_factory=set)


def changing(scope: ReadScope, shas: list[str]) -> str:
    """SQL of the ids whose rows or retraction may differ among the commits `shas` (a published
    head and the chain after it), or "" when that cannot be told from the index alone: a
    commit not on the indexed chain, a retention policy (what expires depends on the commit's
    time) or a reclassification (it raises rows it does not touch). Otherwise `visible` at
    each commit is the index's rows of its seq through a filter of each row alone (binding,
    ceiling), so an id changes only where one of its rows is added or removed between them,
    or a retraction of it is: an increment then compares those ids, not every visible row."""
    from ..index.stewardship import retention_policies

    seqs = [scope.one("SELECT seq FROM commits WHERE sha = ?", [sha]) for sha in shas]
    if None in seqs or any(retention_policies(scope.git, sha) for sha in shas):
        return ""
    low, high = min(row[0] for row in seqs), max(row[0] for row in seqs)
    if scope.one("SELECT 1 FROM obs_versions WHERE reclassify_rank IS NOT NULL AND added_seq <= ? AND removed_seq > ? "
                 "LIMIT 1", [high, low]):
        return ""
    window = f"(added_seq > {low} AND added_seq <= {high} OR removed_seq > {low} AND removed_seq <= {high})"
    scope.con.execute(f"CREATE OR REPLACE TEMP TABLE publication_changing AS SELECT id FROM obs_versions WHERE {window} "
                      "UNION SELECT unnest(retracts) FROM obs_versions WHERE special AND len(retracts) > 0 AND " + window)
    return "SELECT id FROM publication_changing"


def state(scope: ReadScope, only: str = "") -> State:
    """The state as of the scope's commit, kept in DuckDB for the next `step`; with `only`
    (`changing`), just the rows of those ids."""
    _keep(scope, only)
    scope.con.execute("DROP TABLE IF EXISTS publication_kept; ALTER TABLE publication_now RENAME TO publication_kept")
    retracted = {i for (i,) in scope.rows(f"SELECT DISTINCT id FROM visible WHERE row_id IN ({retracted_sql('visible')})")}
    return _finish(scope, retracted, only)


def step(scope: ReadScope, before: State) -> tuple[State, Change]:
    """The state as of the scope's commit, and what changed since `before` (the state the
    scope computed last, or the empty one before a first commit): only the ids whose rows
    differ are read."""
    _keep(scope, before.only)
    if before.kept:
        scope.con.execute(
            "CREATE OR REPLACE TEMP TABLE publication_differ AS SELECT DISTINCT id FROM (SELECT n.id FROM "
            "publication_now AS n ANTI JOIN publication_kept AS k ON n.row_id = k.row_id AND n.gone = k.gone "
            "UNION ALL SELECT k.id FROM publication_kept AS k ANTI JOIN publication_now AS n "
            "ON n.row_id = k.row_id AND n.gone = k.gone)")
        old = scope.rows("SELECT id, entity, row_id, gone FROM publication_kept WHERE id IN (SELECT id FROM publication_differ)")
        new = scope.rows("SELECT id, entity, row_id, gone FROM publication_now WHERE id IN (SELECT id FROM publication_differ)")
        differ = {row[0] for row in old} | {row[0] for row in new}  # each differing id has a row on one side
    else:
        old, new = [], scope.rows("SELECT id, entity, row_id, gone FROM publication_now")
        differ = {row[0] for row in new}
    scope.con.execute("DROP TABLE IF EXISTS publication_kept; ALTER TABLE publication_now RENAME TO publication_kept")
    was = {obs_id: entity for obs_id, entity, _, gone in old if not gone}
    now: dict[str, str | None] = {}
    change = Change()
    retracted = before.retracted - differ
    for obs_id, entity, row_id, gone in new:
        if gone:
            retracted.add(obs_id)
        else:
            now[obs_id] = entity
            change.appeared.setdefault(obs_id, []).append(row_id)
    change.left = was.keys() - now.keys()
    change.vanished = {obs_id for obs_id, _, _, gone in old if gone} - {row[0] for row in new}
    change.appeared = {i: rows for i, rows in change.appeared.items() if i not in was}
    change.entities = {e for e in (was.get(i) or now.get(i) for i in change.left | change.appeared.keys()) if e}
    return _finish(scope, retracted, before.only), change


def _keep(scope: ReadScope, only: str) -> None:
    scope.con.execute("CREATE OR REPLACE TEMP TABLE publication_now AS SELECT id, entity, row_id, "
                      f"row_id IN ({retracted_sql('visible')}) AS gone FROM visible" + (f" WHERE id IN ({only})" if only else ""))


def _finish(scope: ReadScope, retracted: set[str], only: str) -> State:
    from ..format.vocabulary import ENTITY_SCHEMAS_DIR

    special = special_rows(scope.con, "visible")
    listed = f"visible WHERE row_id NOT IN ({retracted_sql('visible')})" if only else "publication_kept WHERE NOT gone"
    return State(listed=scope.one(f"SELECT EXISTS (SELECT 1 FROM {listed})")[0], only=only,
                 retracted=retracted, merges=merge_map(special, retracted_ids(special)), kept=True,
                 schemas=scope.git.run("ls-tree", scope.at_commit, ENTITY_SCHEMAS_DIR, check=False).decode("utf-8", "replace"))


def listed_among(scope: ReadScope, ids: set[str]) -> set[str]:
    """Which of `ids` the state computed last lists."""
    return {i for (i,) in scope.rows(f"SELECT DISTINCT id FROM publication_kept WHERE NOT gone AND id IN {_in(ids)}")} if ids else set()


def touched(before: State, after: State, change: Change) -> set[str] | None:
    """The entities whose snapshot may differ between two states, or None for every entity
    (the policies changed). An entity's snapshot depends on its family's visible rows (its
    own and those merged into it), the retractions among them, and its type's policies."""
    if before.schemas != after.schemas and (before.listed or before.schemas):
        return None
    entities = set(change.entities)
    entities |= {e for e in before.merges.keys() | after.merges.keys() if before.merges.get(e) != after.merges.get(e)}
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


def held_back(scope: ReadScope) -> int:
    """How many observations the binding sees at the scope's commit that its ceiling keeps out."""
    from ..index.stewardship import above_ceiling_sql

    if scope.ceiling is None:
        return 0
    return int(scope.one(f"SELECT count(DISTINCT o.id) FROM {above_ceiling_sql('visible_all', scope.raised, scope.ceiling)}")[0])


def additions(scope: ReadScope, repo: str, rows: dict[int, list[int]]) -> dict[str, Any]:
    """The rows of `observations`, `observation_fields` and `relations` for the observations
    that appear at each seq (seq → their row ids in `obs_versions`), every seq in one pass:
    right where `visible` holds the stored rows as they are (no classification raised)."""
    pairs = [(row_id, seq) for seq, row_ids in rows.items() for row_id in row_ids]
    scope.con.execute("CREATE OR REPLACE TEMP TABLE publication_added AS SELECT o.*, w.seq AS publication_seq "
                      "FROM obs_versions AS o JOIN (SELECT unnest(?::BIGINT[]) AS row_id, unnest(?::INTEGER[]) AS seq) "
                      "AS w ON o.row_id = w.row_id", [[r for r, _ in pairs], [q for _, q in pairs]])
    return _added(scope, repo)


def visible_additions(scope: ReadScope, repo: str, seq: int, ids: set[str]) -> dict[str, Any]:
    """`additions` of the observations `ids` that appear at `seq`, as `visible` holds them at
    the scope's commit (where a classification is raised)."""
    scope.con.execute("CREATE OR REPLACE TEMP TABLE publication_added AS SELECT o.*, "
                      f"{seq}::INTEGER AS publication_seq FROM visible AS o WHERE o.id IN {_in(ids)}")
    return _added(scope, repo)


def _added(scope: ReadScope, repo: str) -> dict[str, Any]:
    head = f"{literal(repo)} AS repo"
    return {
        "observations": _arrow(scope, f"SELECT {head}, {OBSERVATION}, o.publication_seq AS added_seq "
                                      "FROM publication_added AS o ORDER BY added_seq, o.id"),
        "observation_fields": _arrow(scope, f"SELECT {head}, o.id AS observation_id, o.entity, f.key AS field, "
                                            "f.value::VARCHAR AS value, o.publication_seq AS added_seq "
                                            "FROM publication_added AS o, json_each(o.fields) AS f "
                                            "WHERE o.fields IS NOT NULL ORDER BY added_seq, observation_id, field"),
        "relations": _arrow(scope, f"SELECT {head}, o.id AS observation_id, o.r.type AS type, o.entity AS source_entity, "
                                   "o.r.target AS target_entity, o.publication_seq AS added_seq FROM "
                                   "(SELECT id, entity, publication_seq, unnest(relations) AS r FROM publication_added) AS o "
                                   "ORDER BY added_seq, observation_id, type, target_entity"),
    }


def removals(repo: str, gone: list[tuple[int, str, str]]) -> Any:
    """`observation_removals` rows: (seq, id, reason)."""
    import pyarrow as pa

    rows = [{"repo": repo, "observation_id": i, "removed_seq": seq, "reason": reason} for seq, i, reason in sorted(gone)]
    return pa.Table.from_pylist(rows, schema=pa.schema([("repo", pa.string()), ("observation_id", pa.string()),
                                                       ("removed_seq", pa.int32()), ("reason", pa.string())]))


def snapshots(repo: str, changed: list[tuple[int, str, Snapshot]]) -> Any:
    """`entity_snapshots` rows: (seq, entity, its snapshot from that seq on)."""
    import pyarrow as pa

    rows = [{"repo": repo, "entity_id": entity, "from_seq": seq, "snapshot": snap, "provenance": prov, "deleted": deleted,
             "merged_into": merged} for seq, entity, (snap, prov, deleted, merged) in sorted(changed)]
    return pa.Table.from_pylist(rows, schema=pa.schema([("repo", pa.string()), ("entity_id", pa.string()),
                                                       ("from_seq", pa.int32()), ("snapshot", pa.string()),
                                                       ("provenance", pa.string()), ("deleted", pa.bool_()),
                                                       ("merged_into", pa.string())]))


def _arrow(scope: ReadScope, sql: str) -> Any:
    return scope.con.execute(sql).fetch_arrow_table()


def repository_id(scope: ReadScope, root: str) -> str:
    """The repository's published name: its origin URL without credentials, else the id of its
    root commit (docs/design.md §16)."""
    url = scope.git.run("config", "--get", "remote.origin.url", check=False).decode("utf-8", "replace").strip()
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1", url) if url else root
