"""Identity candidates (docs/design.md §20): pairs of entities of one type that may be the same,
computed in DuckDB SQL over a relation of snapshots.

Why DuckDB's own functions (`jaro_winkler_similarity`, `levenshtein`) and no record-linkage
library: the index is already DuckDB, the snapshots are already a table in it, and the whole
queue is a few joins, so there is nothing to install, nothing to move out of the database and
the work runs where the data is (measured on FEBRL by bench/identity).

How, step by step (each a temporary table `<p>_…` of the connection):
- values: every scalar field of every snapshot, with the observation that won it (provenance);
- fields: what each type compares: its schema's `identity` block, else its string fields
  present on at least half of its entities (method `name`);
- features: each value normalised once (`format.identity.normalize`; a date keeps its digits,
  a number its value);
- blocking: two entities are compared only when they share the normalised value of a key or
  of a compared field; a block of more than `BLOCK_CAP` entities (a state, a country: a value
  that says little) is skipped, so the work stays near linear;
- weights: a compared field weighs what an agreement on it tells, log2 of its number of
  distinct values within the type (the Fellegi–Sunter agreement weight with m ≈ 1 and
  u ≈ 1/distinct), computed from the snapshots, stored in `identity_weights` and shown by
  `status`; the same snapshots give the same weights;
- score: the weighted mean of the similarities of the compared fields present on both sides,
  each field's absence on one side only counting as half a disagreement; `strong` when a key's
  normalised values are equal, `probable` when the score reaches the type's threshold.
Every number is rounded to 6 decimals and every sum is of integers (millionths: exact in any
order, no ordered aggregate to hold in memory), every list ordered: the same snapshots and
schemas give the same rows.
"""

from __future__ import annotations

from typing import Any

from ..format.identity import DEFAULT_THRESHOLD, METHODS, IdentitySpec, normalize
from ..gitstore import Git

_LOW = (1 << 41) - 1  # the bits of a packed comparison that hold a feature id
BLOCK_CAP = 20  # entities in one block, at most; larger blocks are skipped (FEBRL2 keeps every true pair)
TABLE_COLUMNS = ("entity_a", "entity_b", "entity_type", "score", "tier", "evidence")

# similarities read the first COMPARED characters of each normalised value: a name, a code, a
# date is far shorter, and both functions take time in the product of the lengths, so one pair
# of megabyte values would hold every index build for hours (equality, and so keys, reads it all)
COMPARED = 256
_A, _B = f"left(a.norm, {COMPARED})", f"left(b.norm, {COMPARED})"
_EDITS = f"1 - levenshtein({_A}, {_B}) / greatest(length({_A}), length({_B}))::DOUBLE"
SIMILARITY = {
    "exact": "(a.norm = b.norm)::DOUBLE",
    "name": f"jaro_winkler_similarity({_A}, {_B})",
    "code": _EDITS,
    "date": _EDITS,
    "number": "CASE WHEN a.num = b.num THEN 1.0 ELSE greatest(0.0, 1 - abs(a.num - b.num) "
              "/ greatest(abs(a.num), abs(b.num))) END",
}
COMPARISON = {"exact": "equal", "name": "jaro_winkler", "code": "levenshtein", "date": "levenshtein", "number": "relative_difference"}


def specs_at(git: Git, commit: str) -> dict[str, IdentitySpec]:
    """type → its declared identity spec, from the entity schemas in the tree of `commit`."""
    from ..format.entity_schema import read_entity_schema
    from ..format.identity import parse_identity
    from ..format.vocabulary import ENTITY_SCHEMAS_DIR

    specs: dict[str, IdentitySpec] = {}
    listing = git.run("ls-tree", "--name-only", "-z", commit, ENTITY_SCHEMAS_DIR, check=False).split(b"\0")
    for raw in sorted(listing):
        path = raw.decode("utf-8", "replace")
        if not path.endswith(".yaml"):
            continue
        data = git.run("cat-file", "blob", f"{commit}:{path}", check=False)
        schema = read_entity_schema(path, data)[0] if data else None
        if schema and "identity" in schema:
            spec = parse_identity(schema["identity"])[0]
            if spec is not None:
                specs[path.rsplit("/", 1)[-1][: -len(".yaml")]] = spec
    return specs


def compute(con: Any, snapshots: str, specs: dict[str, IdentitySpec], distinct: list[tuple[str, str]],
            *, p: str = "ident", entity_type: str | None = None) -> str:
    """Fill the temporary table `<p>_out` (TABLE_COLUMNS) with the candidates among `snapshots`
    (a relation of entity_id, entity_type, snapshot, provenance, deleted: surviving entities),
    leaving out the `distinct` pairs; `<p>_weights` holds the weights. Returns `<p>_out`."""
    where = "NOT s.deleted" + (" AND s.entity_type = ?" if entity_type else "")
    params = [entity_type] if entity_type else []
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {p}_values AS
        SELECT s.entity_id, s.entity_type, f.key AS field, json_type(f.value) AS jtype,
               CASE WHEN json_type(f.value) = 'VARCHAR' THEN f.value ->> '$' ELSE f.value::VARCHAR END AS raw,
               json_extract_string(s.provenance::JSON, '$."' || f.key || '"') AS obs
        FROM {snapshots} AS s, json_each(s.snapshot::JSON) AS f
        WHERE {where} AND json_type(f.value) IN ('VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE')""", params)
    _plan_fields(con, p, specs)
    _features(con, p)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {p}_weights AS
        SELECT entity_type, field, method, round(log2(greatest(count(DISTINCT norm), 2)), 6) AS weight
        FROM {p}_features WHERE role = 'compare' GROUP BY ALL""")
    con.execute(f"CREATE OR REPLACE TEMP TABLE {p}_distinct (a VARCHAR, b VARCHAR)")
    if distinct:
        con.executemany(f"INSERT INTO {p}_distinct VALUES (?, ?)", sorted({tuple(sorted(pair)) for pair in distinct}))
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {p}_pairs AS
        WITH blocks AS (
            SELECT entity_type, field, norm FROM {p}_features GROUP BY ALL
            HAVING count(*) BETWEEN 2 AND {BLOCK_CAP})
        SELECT DISTINCT a.entity_id AS ea, b.entity_id AS eb, a.entity_type
        FROM {p}_features a JOIN blocks k USING (entity_type, field, norm)
        JOIN {p}_features b ON b.entity_type = a.entity_type AND b.field = a.field AND b.norm = a.norm
        WHERE a.entity_id < b.entity_id
          AND NOT EXISTS (SELECT 1 FROM {p}_distinct d WHERE d.a = a.entity_id AND d.b = b.entity_id)""")
    cases = " ".join(f"WHEN '{m}' THEN {SIMILARITY[m]}" for m in METHODS)
    labels = " ".join(f"WHEN '{m}' THEN '{COMPARISON[m]}'" for m in METHODS)
    thresholds = _thresholds(con, p, specs)
    # every field both sides have, compared (feature ids only: the values join back at the end);
    # a declared `name` field also against the other side's other declared `name` fields (a given
    # name written as the surname): the best comparison is kept, by (similarity, the same field,
    # the lower id)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {p}_compared AS
        WITH raw AS (
            SELECT q.ea, q.eb, a.field, a.role, a.fid AS fa, b.fid AS fb,
                   round(CASE WHEN a.role = 'key' THEN (a.norm = b.norm)::DOUBLE ELSE CASE a.method {cases} END END, 6) AS sim,
                   (a.field = b.field)::BIGINT AS same
            FROM {p}_pairs q
            JOIN {p}_features a ON a.entity_id = q.ea
            JOIN {p}_features b ON b.entity_id = q.eb AND b.role = a.role AND (b.field = a.field OR (a.across AND b.across))
        ),
        packed AS (
            SELECT ea, eb, field, role, max(same) AS both_have,
                   max((round(sim * 1000000)::BIGINT << 42) | (same << 41) | ({_LOW} - fb)) AS best, any_value(fa) AS fa
            FROM raw GROUP BY ALL
        )
        SELECT ea, eb, field, role, fa, {_LOW} - (best & {_LOW}) AS fb, (best >> 42) / 1000000 AS sim
        FROM packed WHERE both_have = 1""")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {p}_present AS
        SELECT f.entity_id, sum(round(w.weight * 1000000)::HUGEINT) AS total
        FROM {p}_features f JOIN {p}_weights w USING (entity_type, field) WHERE f.role = 'compare' GROUP BY ALL""")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {p}_scored AS
        WITH scored AS (
            SELECT c.ea, c.eb, q.entity_type,
                   coalesce(sum(round(w.weight * 1000000)::HUGEINT * round(c.sim * 1000000)::HUGEINT)
                            FILTER (WHERE c.role = 'compare'), 0) / 1000000 AS agreed,
                   coalesce(sum(round(w.weight * 1000000)::HUGEINT) FILTER (WHERE c.role = 'compare'), 0) AS present,
                   bool_or(c.role = 'key' AND c.sim = 1) AS keyed
            FROM {p}_compared c JOIN {p}_pairs q USING (ea, eb)
            LEFT JOIN {p}_weights w ON w.entity_type = q.entity_type AND w.field = c.field AND c.role = 'compare'
            GROUP BY ALL
        ),
        final AS (   -- a field only one side has counts as half a disagreement
            SELECT s.ea, s.eb, s.entity_type, s.keyed,
                   round(CASE WHEN s.present = 0 THEN (CASE WHEN s.keyed THEN 1.0 ELSE 0.0 END)
                              ELSE s.agreed::DOUBLE
                                   / (s.present + (coalesce(pa.total, 0) + coalesce(pb.total, 0) - 2 * s.present) / 2)::DOUBLE
                         END, 6) AS score
            FROM scored s LEFT JOIN {p}_present pa ON pa.entity_id = s.ea LEFT JOIN {p}_present pb ON pb.entity_id = s.eb
        )
        SELECT f.ea, f.eb, f.entity_type, f.score, CASE WHEN f.keyed THEN 'strong' ELSE 'probable' END AS tier
        FROM final f LEFT JOIN {thresholds} t USING (entity_type)
        WHERE f.keyed OR f.score >= coalesce(t.threshold, {DEFAULT_THRESHOLD})""")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {p}_out AS
        SELECT s.ea AS entity_a, s.eb AS entity_b, s.entity_type, s.score, s.tier,
               -- keys first, then by field: sorted after the unordered aggregate (an ordered one holds
               -- every group's rows in memory at once)
               to_json(list_transform(list_sort(list({{'k': (c.role <> 'key')::INTEGER, 'f': c.field, 'e': {{
                   'field': c.field, 'values': [a.raw, b.raw], 'observations': [a.obs, b.obs],
                   'comparison': CASE WHEN c.role = 'key' THEN 'key' ELSE CASE a.method {labels} END END
                                 || CASE WHEN a.field <> b.field THEN ' across ' || b.field ELSE '' END,
                   'similarity': c.sim}}}})), x -> x.e))::VARCHAR AS evidence
        FROM {p}_scored s JOIN {p}_compared c USING (ea, eb)
        JOIN {p}_features a ON a.fid = c.fa JOIN {p}_features b ON b.fid = c.fb
        WHERE c.role = 'compare' OR c.sim = 1
        GROUP BY ALL""")
    return f"{p}_out"


def _plan_fields(con: Any, p: str, specs: dict[str, IdentitySpec]) -> None:
    """`<p>_fields` (entity_type, field, role, method): declared types by their spec, the others by
    their string fields present on at least half of their entities."""
    rows = sorted({(t, f, "key", "exact", False) for t, s in specs.items() for f in s.keys}
                  | {(t, f, "compare", m, m == "name") for t, s in specs.items() for f, m in s.compare.items()})
    con.execute(f"CREATE OR REPLACE TEMP TABLE {p}_fields (entity_type VARCHAR, field VARCHAR, role VARCHAR, "
                "method VARCHAR, across BOOLEAN)")
    if rows:
        con.executemany(f"INSERT INTO {p}_fields VALUES (?, ?, ?, ?, ?)", rows)
    declared = sorted(specs)
    # an undeclared type's text fields are compared field by field only: its fields are not
    # known to be names (a domain against a country says nothing, and costs fields² comparisons)
    con.execute(f"""INSERT INTO {p}_fields
        WITH sizes AS (SELECT entity_type, count(DISTINCT entity_id) AS n FROM {p}_values GROUP BY ALL)
        SELECT v.entity_type, v.field, 'compare', 'name', FALSE FROM {p}_values v JOIN sizes USING (entity_type)
        WHERE v.jtype = 'VARCHAR' AND v.entity_type NOT IN (SELECT unnest(?::VARCHAR[]))
        GROUP BY v.entity_type, v.field, sizes.n HAVING count(DISTINCT v.entity_id) * 2 >= sizes.n""", [declared])


def _features(con: Any, p: str) -> None:
    """`<p>_features`: each planned value normalised (a date: its digits; a number: its value)."""
    raws = [r for (r,) in con.execute(
        f"SELECT DISTINCT v.raw FROM {p}_values v JOIN {p}_fields USING (entity_type, field) ORDER BY 1").fetchall()]
    import pyarrow as pa

    con.register(f"{p}_norm_in", pa.table({"raw": raws, "norm": [normalize(r) for r in raws]}))
    con.execute(f"""CREATE OR REPLACE TEMP TABLE {p}_features AS
        SELECT row_number() OVER (ORDER BY v.entity_id, v.field, f.role) AS fid,
               v.entity_id, v.entity_type, v.field, f.role, f.method, f.across, v.raw, v.obs,
               CASE WHEN f.method = 'date' THEN regexp_replace(v.raw, '[^0-9]', '', 'g') ELSE n.norm END AS norm,
               TRY_CAST(v.raw AS DOUBLE) AS num
        FROM {p}_values v JOIN {p}_fields f USING (entity_type, field) JOIN {p}_norm_in n USING (raw)""")
    con.unregister(f"{p}_norm_in")
    con.execute(f"DELETE FROM {p}_features WHERE norm = '' OR (method = 'number' AND num IS NULL)")


def _thresholds(con: Any, p: str, specs: dict[str, IdentitySpec]) -> str:
    con.execute(f"CREATE OR REPLACE TEMP TABLE {p}_thresholds (entity_type VARCHAR, threshold DOUBLE)")
    if specs:
        con.executemany(f"INSERT INTO {p}_thresholds VALUES (?, ?)", sorted((t, s.threshold) for t, s in specs.items()))
    return f"{p}_thresholds"
