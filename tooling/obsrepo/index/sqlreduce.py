"""The reducer of docs/design.md §4 in DuckDB SQL, for every entity at once.

It must give exactly what `reduce.reduce_entity` gives (a property test holds them
together). Merges and retractions are few and are resolved in Python first (`reduce`);
per-field winners, the deletion gate and `merge_array` unions run in SQL.

Sort keys are made NOT NULL and numeric so that one ORDER BY serves every policy:
    highest_priority  (-priority, -specificity, -time, id)
    last_write        (-time, 0, 0, id)
    most_specific     (-specificity, -priority, -time, id)
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

from ..format.reduce import Obs, merge_map, retracted_ids, survivor
from ..format.vocabulary import CORRECTION_PRIORITY

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

SQL = """
WITH cand AS (
    SELECT c.id, c.entity, c.priority, c.specificity, c.epoch, c.ts, c.fields,
           coalesce(m.survivor, c.entity) AS eid
    FROM {candidates} AS c LEFT JOIN merge_map m ON m.entity = c.entity
    WHERE c.entity IS NOT NULL AND c.id NOT IN (SELECT id FROM retracted) AND {counts}
),
counts AS (
    SELECT eid, count(*) AS n, max(epoch) AS last_epoch, arg_max(ts, epoch) AS last_ts FROM cand GROUP BY eid
),
gate AS (
    SELECT eid, first(json_extract(fields, '$._deleted') ORDER BY priority DESC, epoch DESC, id ASC)::VARCHAR AS deleted
    FROM cand WHERE json_exists(fields, '$._deleted') GROUP BY eid
),
pairs AS (
    SELECT c.eid, c.id, c.priority, c.specificity, c.epoch, f.key AS field, f.value::VARCHAR AS value
    FROM cand c, json_each(c.fields) f
    WHERE f.key <> '_deleted'
),
kv AS (
    SELECT x.*, coalesce(p.policy, 'highest_priority') AS policy, x.priority >= {correction} AS is_correction
    FROM pairs x LEFT JOIN policies p ON p.entity_type = split_part(x.eid, '/', 1) AND p.field = x.field
),
keyed AS (
    SELECT *,
        max(is_correction::INTEGER) OVER (PARTITION BY eid, field) = 1 AS has_correction,
        CASE WHEN policy = 'last_write' THEN -epoch::DOUBLE
             WHEN policy = 'most_specific' THEN -specificity ELSE -priority::DOUBLE END AS k1,
        CASE WHEN policy = 'last_write' THEN 0.0
             WHEN policy = 'most_specific' THEN -priority::DOUBLE ELSE -specificity END AS k2,
        CASE WHEN policy = 'last_write' THEN 0.0 ELSE -epoch::DOUBLE END AS k3,
        -priority::DOUBLE AS h1, -specificity AS h2, -epoch::DOUBLE AS h3
    FROM kv
),
single AS (   -- every policy but merge_array, and any field that has corrections
    SELECT eid, field, policy,
        first(value ORDER BY CASE WHEN policy = 'merge_array' THEN h1 ELSE k1 END,
                             CASE WHEN policy = 'merge_array' THEN h2 ELSE k2 END,
                             CASE WHEN policy = 'merge_array' THEN h3 ELSE k3 END, id) AS value,
        first(id ORDER BY CASE WHEN policy = 'merge_array' THEN h1 ELSE k1 END,
                          CASE WHEN policy = 'merge_array' THEN h2 ELSE k2 END,
                          CASE WHEN policy = 'merge_array' THEN h3 ELSE k3 END, id) AS winner
    FROM keyed
    WHERE (policy <> 'merge_array' AND NOT has_correction) OR (has_correction AND is_correction)
    GROUP BY eid, field, policy
),
level AS (    -- merge_array without corrections: the highest priority present
    SELECT eid, field, max(priority) AS top FROM keyed
    WHERE policy = 'merge_array' AND NOT has_correction GROUP BY eid, field
),
ranked AS (
    SELECT k.eid, k.field, k.id, k.value,
           row_number() OVER (PARTITION BY k.eid, k.field ORDER BY k.h1, k.h2, k.h3, k.id) AS rank
    FROM keyed k JOIN level l ON l.eid = k.eid AND l.field = k.field AND k.priority = l.top
),
lists AS (
    SELECT eid, field, id, rank,
           CASE WHEN json_type(value::JSON) = 'ARRAY' THEN json_extract(value::JSON, '$[*]') ELSE [value::JSON] END AS items
    FROM ranked WHERE value <> 'null'
),
elements AS (
    SELECT eid, field, id, rank, unnest(items)::VARCHAR AS element, generate_subscripts(items, 1) AS position FROM lists
),
firsts AS (
    SELECT eid, field, element, min(rank * 1000000 + position) AS place FROM elements GROUP BY ALL
),
unions AS (
    SELECT eid, field, '[' || string_agg(element, ',' ORDER BY place) || ']' AS value FROM firsts GROUP BY eid, field
),
merged AS (
    SELECT r.eid, r.field,
        CASE WHEN first(r.value ORDER BY r.rank) = 'null' THEN '[]' ELSE coalesce(any_value(u.value), '[]') END AS value,
        CASE WHEN first(r.value ORDER BY r.rank) = 'null' THEN to_json([first(r.id ORDER BY r.rank)])::VARCHAR
             ELSE to_json(list(r.id ORDER BY r.rank) FILTER (WHERE r.value <> 'null'))::VARCHAR END AS winner
    FROM ranked r LEFT JOIN unions u ON u.eid = r.eid AND u.field = r.field GROUP BY r.eid, r.field
)
SELECT eid, field, CASE WHEN policy = 'merge_array' AND value = 'null' THEN '[]' ELSE value END AS value,
       CASE WHEN policy = 'merge_array' THEN to_json([winner])::VARCHAR ELSE to_json(winner)::VARCHAR END AS provenance,
       NULL AS n, NULL AS last_ts, NULL AS deleted
FROM single
UNION ALL SELECT eid, field, value, winner, NULL, NULL, NULL FROM merged
UNION ALL SELECT c.eid, NULL, NULL, NULL, c.n, c.last_ts, g.deleted FROM counts c LEFT JOIN gate g USING (eid)
"""


def prepare(con: Any, special: list[Obs], policies: dict[tuple[str, str], str]) -> dict[str, str]:
    """Temp tables for the merges, retractions and policies; returns the merge map."""
    gone = retracted_ids(special)
    merges = merge_map(special, gone)
    con.execute("CREATE OR REPLACE TEMP TABLE merge_map (entity VARCHAR, survivor VARCHAR)")
    con.execute("CREATE OR REPLACE TEMP TABLE retracted (id VARCHAR)")
    con.execute("CREATE OR REPLACE TEMP TABLE policies (entity_type VARCHAR, field VARCHAR, policy VARCHAR)")
    if merges:
        con.executemany("INSERT INTO merge_map VALUES (?, ?)", [(e, survivor(e, merges)) for e in sorted(merges)])
    if gone:
        con.executemany("INSERT INTO retracted VALUES (?)", [(i,) for i in sorted(gone)])
    if policies:
        con.executemany("INSERT INTO policies VALUES (?, ?, ?)", [(t, f, p) for (t, f), p in sorted(policies.items())])
    return merges


def counts_clause(as_of: str | None, valid_at: str | None, vfrom: str = "c.vfrom", epoch: str = "c.epoch",
                  vuntil: str = "c.vuntil") -> str:
    """`reduce.counts` over a candidate row `c` (its epoch, vfrom and vuntil in microseconds, or
    the expressions given for them); the instants are written as integer literals."""
    if as_of is None and valid_at is None:
        return "TRUE"
    moment = _micros(as_of if as_of is not None else valid_at)  # type: ignore[arg-type]
    holds = f"(coalesce({vfrom}, {epoch}) <= {moment} AND ({vuntil} IS NULL OR {vuntil} > {moment}))"
    return holds if as_of is not None else f"(({vfrom} IS NULL AND {vuntil} IS NULL) OR {holds})"


def _micros(instant: str) -> int:
    from ..times import parse_timestamp

    return (parse_timestamp(instant) - _EPOCH) // timedelta(microseconds=1)


def reduce_all(con: Any, candidates_sql: str, params: list[Any], special: list[Obs],
               policies: dict[tuple[str, str], str], at_commit: str | None = None, *,
               as_of: str | None = None, valid_at: str | None = None) -> dict[str, dict[str, Any]]:
    """Snapshots of every entity among `candidates_sql` (columns id, entity, priority,
    specificity, epoch, ts, fields, vfrom, vuntil), with the candidates of `reduce.counts`.
    Entities merged away are not listed: they live on in their survivor."""
    prepare(con, special, policies)
    sql = SQL.format(candidates=candidates_sql, correction=CORRECTION_PRIORITY, counts=counts_clause(as_of, valid_at))
    rows = con.execute(sql, params).fetchall()
    out: dict[str, dict[str, Any]] = {}
    for eid, field, value, provenance, count, last_ts, deleted in rows:
        snap = out.setdefault(eid, {"entity_id": eid, "entity_type": eid.split("/", 1)[0], "snapshot": {},
                                    "provenance": {}, "observation_count": 0, "last_observation_at": None,
                                    "computed_at": None, "at_commit": at_commit, "valid_at": as_of or valid_at,
                                    "deleted": False})
        if field is None:
            snap["observation_count"] = count
            snap["last_observation_at"] = snap["computed_at"] = last_ts
            snap["deleted"] = deleted == "true"
            continue
        parsed = json.loads(value)
        if parsed is None:
            continue  # a winning null removes the field
        snap["snapshot"][field] = parsed
        snap["provenance"][field] = json.loads(provenance)
    for snap in out.values():
        if snap["deleted"]:
            snap["snapshot"], snap["provenance"] = {}, {}
        snap["snapshot"] = dict(sorted(snap["snapshot"].items()))
        snap["provenance"] = dict(sorted(snap["provenance"].items()))
    return dict(sorted(out.items()))
