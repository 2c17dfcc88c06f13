"""The `identity_candidates` and `identity_weights` tables (docs/design.md §20): the identity
review queue at the indexed commit, over every tenant's observations (what an unbound caller
sees; a bound caller's queue is computed from what it sees, read/identity.py). Recomputed
whole when an update changes its inputs: the queue depends on every snapshot of a type (its
weights, its blocks), and the SQL is near linear (bench/identity); an update that changes no
snapshot, identity schema or declaration keeps it as it is."""

from __future__ import annotations

from typing import Any

from ..gitstore import Git
from .entity_table import CURRENT

TABLES = """
CREATE TABLE IF NOT EXISTS identity_candidates (
    entity_a VARCHAR NOT NULL, entity_b VARCHAR NOT NULL, entity_type VARCHAR NOT NULL,
    score DOUBLE NOT NULL, tier VARCHAR NOT NULL, evidence JSON NOT NULL
);
CREATE TABLE IF NOT EXISTS identity_weights (
    entity_type VARCHAR NOT NULL, field VARCHAR NOT NULL, method VARCHAR NOT NULL, weight DOUBLE NOT NULL
);
"""

# what each table holds, in words (the generated docs/reference/tables.md shows them)
DESCRIPTIONS = {
    "identity_candidates": "the identity review queue at the indexed commit over every tenant's observations "
                           "(docs/design.md §20): pairs of surviving entities of one type (`entity_a` before `entity_b` "
                           "in byte order), not merged and not declared distinct, with `score` in [0, 1], `tier` "
                           "(`strong`: a key matched; `probable`: the score reached the type's threshold) and the "
                           "per-field `evidence` (JSON: field, values, observations, comparison, similarity)",
    "identity_weights": "the weight of each compared field of each type: log2 of its number of distinct normalised "
                        "values (at least 1), derived from the snapshots at every build; `status` shows their "
                        "fingerprint",
}


def distinct_pairs(con: Any, relation: str, merges: dict[str, str]) -> list[tuple[str, str]]:
    """The pairs declared distinct (DISTINCT_FROM, not retracted) among the rows of `relation`,
    each side as its survivor."""
    from ..format.reduce import survivor
    from .stewardship import retracted_sql

    rows = con.execute(f"""SELECT x.entity, x.r.target FROM (
            SELECT o.entity, o.row_id, unnest(o.relations) AS r FROM {relation} AS o WHERE o.entity IS NOT NULL) AS x
        WHERE x.r.type = 'DISTINCT_FROM' AND x.row_id NOT IN ({retracted_sql(relation)})""").fetchall()
    pairs = {tuple(sorted((survivor(a, merges) or a, survivor(b, merges) or b))) for a, b in rows}
    return sorted((a, b) for a, b in pairs if a != b)


def refresh_identity(git: Git, con: Any, target: str) -> bool:
    """Recompute the queue at `target` unless its inputs are those it was computed from (an
    update that changed no snapshot, no identity schema and no declaration: a log event, a
    comprehension); whether it was recomputed. The inputs' digest is one aggregate over the
    snapshots, a small part of the queue's cost."""
    from ..format.reduce import merge_map, retracted_ids
    from .identity import compute, specs_at
    from .reducer_rows import special_rows

    con.execute(TABLES)
    special = special_rows(con, CURRENT)
    merges = merge_map(special, retracted_ids(special))
    specs, distinct = specs_at(git, target), distinct_pairs(con, CURRENT, merges)
    inputs = _inputs_digest(con, specs, distinct)
    if con.execute("SELECT value FROM meta WHERE key = 'identity_inputs'").fetchone() == (inputs,):
        return False
    out = compute(con, "entity_snapshots", specs, distinct)
    con.execute("DELETE FROM identity_candidates")
    con.execute("DELETE FROM identity_weights")
    con.execute(f"INSERT INTO identity_candidates SELECT * FROM {out} ORDER BY score DESC, entity_a, entity_b")
    con.execute("INSERT INTO identity_weights SELECT * FROM ident_weights ORDER BY ALL")
    con.execute("INSERT OR REPLACE INTO meta VALUES ('identity_inputs', ?)", [inputs])
    return True


def _inputs_digest(con: Any, specs: dict[str, Any], distinct: list[tuple[str, str]]) -> str:
    """What the queue is a function of: every surviving snapshot (an order-free aggregate of
    their hashes), the identity specs and the declared pairs."""
    import hashlib

    count, mixed = con.execute("SELECT count(*), coalesce(bit_xor(hash(entity_id, entity_type, snapshot::VARCHAR, "
                               "provenance::VARCHAR, deleted)), 0) FROM entity_snapshots").fetchone()
    text = repr((count, mixed, sorted((t, repr(spec)) for t, spec in specs.items()), distinct))
    return hashlib.sha256(text.encode()).hexdigest()


def identity_state(con: Any) -> dict[str, Any] | None:
    """What `status` says of the queue at the indexed commit (docs/design.md §20): the weights'
    fingerprint (sha256 of their rows, in order: the same snapshots give the same one), how many
    types and fields they weigh, and how many candidates the queue holds. None: an index
    without the tables."""
    import hashlib
    import json

    try:
        weights = con.execute("SELECT entity_type, field, method, weight FROM identity_weights ORDER BY ALL").fetchall()
        candidates = con.execute("SELECT count(*) FROM identity_candidates").fetchone()[0]
    except Exception:  # duckdb.CatalogException: an index of another format (rebuilt by the next index)
        return None
    digest = hashlib.sha256(json.dumps(weights, separators=(",", ":")).encode()).hexdigest()
    return {"fingerprint": f"sha256:{digest[:16]}", "types": len({row[0] for row in weights}),
            "fields": len(weights), "candidates": candidates}

