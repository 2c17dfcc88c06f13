"""Contested values (docs/design.md §19) over every entity at once: DuckDB narrows, the definition
decides.

A contest needs two candidates of one field at one priority with different values from different
sources, and no correction of that field: SQL keeps only the fields where some priority level
has two values and two sources (a necessary condition, so nothing contested is lost), reads
those fields' candidates, and `format.contested.field_contest` (the definition, once) decides
each. The candidates are the reducer's (sqlreduce's: merges and retractions resolved first, the
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
wanted AS (SELECT * FROM cand WHERE {wanted}),
pairs AS (
    SELECT w.eid, w.id, w.priority, w.source, f.key AS field, f.value::VARCHAR AS value,
           coalesce(p.policy, 'highest_priority') AS policy
    FROM wanted w CROSS JOIN json_each(w.fields) f
    LEFT JOIN policies p ON p.entity_type = split_part(w.eid, '/', 1) AND p.field = f.key
    WHERE f.key <> '_deleted'
),
suspects AS (
    SELECT eid, field FROM pairs WHERE policy <> 'merge_array'
    GROUP BY eid, field, priority HAVING count(DISTINCT value) > 1 AND count(DISTINCT source) > 1
    EXCEPT SELECT eid, field FROM pairs WHERE priority >= {correction}
),
gate AS (
    SELECT eid, first(json_extract(fields, '$._deleted') ORDER BY priority DESC, epoch DESC, id ASC)::VARCHAR AS deleted
    FROM cand WHERE eid IN (SELECT eid FROM suspects) AND json_exists(fields, '$._deleted') GROUP BY eid
)
SELECT p.eid, p.field, p.policy, p.id, c.ts, c.vfrom_ts, c.priority, c.specificity, c.source, p.value
FROM suspects s JOIN pairs p ON p.eid = s.eid AND p.field = s.field JOIN cand c ON c.id = p.id
WHERE s.eid NOT IN (SELECT eid FROM gate WHERE deleted = 'true')
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
                     correction=CORRECTION_PRIORITY)
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
