"""Contested values (docs/design.md §19) over every entity at once: DuckDB narrows, the definition
decides.

SQL finds the reducer's winner of each field that has two sources and no correction, and keeps
the fields where a candidate at the winner's priority from another source, its effective `from`
within the window, writes another value (compared as written: a necessary condition, so nothing
contested is lost); it reads those fields' winners and would-be challengers (no other candidate
changes the answer: the winner beat them all), and `format.contested.field_contest` (the
definition, once) decides each. The candidates are the reducer's (sqlreduce's: merges and retractions resolved first, the
rows that count at the valid time, a deleted entity left out). A property test holds the result
to `entity_contests` over the same observations.
"""

from __future__ import annotations

import json
from itertools import groupby
from typing import Any

from ..format.contested import field_contest
from ..format.reduce import Obs
from ..format.vocabulary import CORRECTION_PRIORITY
from .reducer_rows import INSTANT, instant
from .sqlreduce import counts_clause, prepare

# a candidate row: sqlreduce's columns, with the source and the period's start as written
CANDIDATES = f"""(SELECT o.id, o.entity, o.priority, o.specificity, epoch_us(o.timestamp) AS epoch, {INSTANT} AS ts,
    o.fields, epoch_us(o.valid_from) AS vfrom, epoch_us(o.valid_until) AS vuntil, o.source,
    {instant('o.valid_from')} AS vfrom_ts FROM {{relation}} AS o WHERE {{where}})"""

SQL = """
WITH cand AS (
    SELECT c.*, coalesce(m.survivor, c.entity) AS eid
    FROM {candidates} AS c LEFT JOIN merge_map m ON m.entity = c.entity
    WHERE c.entity IS NOT NULL AND c.id NOT IN (SELECT id FROM retracted) AND {counts}
),
pairs AS MATERIALIZED (   -- a field of a candidate a row; the fields' JSON cast to a map (json_each costs ~6x more)
    SELECT w.eid, w.id, w.priority, w.specificity, w.epoch, coalesce(w.vfrom, w.epoch) AS start, w.ts, w.vfrom_ts,
           w.source, w.entry.key AS field, coalesce(w.entry.value::VARCHAR, 'null') AS value,  -- JSON null: NULL here
           coalesce(p.policy, 'highest_priority') AS policy
    FROM (SELECT *, unnest(map_entries(fields::MAP(VARCHAR, JSON))) AS entry FROM cand
          WHERE fields IS NOT NULL AND {wanted}) AS w
    LEFT JOIN policies p ON p.entity_type = split_part(w.eid, '/', 1) AND p.field = w.entry.key
    WHERE w.entry.key <> '_deleted'
),
disputed AS (   -- two sources, no correction, not merged arrays
    SELECT eid, field FROM pairs WHERE policy <> 'merge_array'
    GROUP BY eid, field HAVING count(DISTINCT source) > 1 AND max(priority) < {correction}
),
winners AS (   -- the reducer's winner of each such field (sqlreduce's order keys)
    SELECT p.eid, p.field, first({{'id': p.id, 'priority': p.priority, 'start': p.start, 'source': p.source, 'value': p.value}}
        ORDER BY CASE WHEN p.policy = 'last_write' THEN -p.epoch::DOUBLE
                      WHEN p.policy = 'most_specific' THEN -p.specificity ELSE -p.priority::DOUBLE END,
                 CASE WHEN p.policy = 'last_write' THEN 0.0
                      WHEN p.policy = 'most_specific' THEN -p.priority::DOUBLE ELSE -p.specificity END,
                 CASE WHEN p.policy = 'last_write' THEN 0.0 ELSE -p.epoch::DOUBLE END, p.id) AS w
    FROM pairs p SEMI JOIN disputed d ON d.eid = p.eid AND d.field = p.field
    GROUP BY p.eid, p.field
),
challenged AS (   -- a challenger as the definition says, its value compared as written (refined in Python)
    SELECT DISTINCT p.eid, p.field FROM pairs p JOIN winners w ON w.eid = p.eid AND w.field = p.field
    WHERE p.priority = w.w.priority AND p.source <> w.w.source AND p.value <> w.w.value
      AND abs(p.start - w.w.start) <= {window}
),
gate AS (
    SELECT eid, first(json_extract(fields, '$._deleted') ORDER BY priority DESC, epoch DESC, id ASC)::VARCHAR AS deleted
    FROM cand WHERE eid IN (SELECT eid FROM challenged) AND json_exists(fields, '$._deleted') GROUP BY eid
)
SELECT p.eid, p.field, p.policy, p.id, p.ts, p.vfrom_ts, p.priority, p.specificity, p.source, p.value
FROM pairs p JOIN winners w ON w.eid = p.eid AND w.field = p.field   -- the winner and who may challenge it: no other
SEMI JOIN challenged c ON c.eid = p.eid AND c.field = p.field         -- candidate changes field_contest's answer
WHERE p.eid NOT IN (SELECT eid FROM gate WHERE deleted = 'true')
  AND (p.id = w.w.id OR (p.priority = w.w.priority AND p.source <> w.w.source AND p.value <> w.w.value
                         AND abs(p.start - w.w.start) <= {window}))
ORDER BY p.eid, p.field
"""

def contests_all(con: Any, candidates_sql: str, params: list[Any], special: list[Obs],
                 policies: dict[tuple[str, str], str], window_seconds: int, *, as_of: str | None = None,
                 valid_at: str | None = None, wanted: str = "TRUE", wanted_params: list[Any] | None = None,
                 ) -> list[dict[str, Any]]:
    """Every contest among `candidates_sql` (CANDIDATES' columns), by entity id, then field;
    `wanted`: SQL over a candidate row (`eid`, its surviving entity) that keeps the entities asked about."""
    prepare(con, special, policies)
    sql = SQL.format(candidates=candidates_sql, counts=counts_clause(as_of, valid_at), wanted=wanted,
                     correction=CORRECTION_PRIORITY, window=window_seconds * 1_000_000)
    rows = con.execute(sql, [*params, *(wanted_params or [])]).fetchall()
    out = []
    for (eid, field, policy), group in groupby(rows, key=lambda r: (r[0], r[1], r[2])):
        carriers = [Obs(id=obs_id, timestamp=ts, entity=eid, fields={field: json.loads(value)}, priority=priority,
                        specificity=specificity, source=source, valid_from=vfrom)
                    for _e, _f, _p, obs_id, ts, vfrom, priority, specificity, source, value in group]
        contest = field_contest(field, policy, carriers, window_seconds)
        if contest is not None:
            out.append({"entity_id": eid, **contest})
    out.sort(key=lambda c: (c["entity_id"], c["field"]))
    return out
