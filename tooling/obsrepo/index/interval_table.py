"""The `field_intervals` table (docs/design.md §19): per entity and field, the periods of valid
time over which the reduced value is constant, at the indexed commit, over every tenant.

Kept for the entities that a period touches: those with at least one candidate (of the entity
or of one merged into it) that wrote `valid`. Without a period an entity's intervals only
follow its observations' timestamps, which `history` and `snapshot --as-of` already say; reducing
every entity over time again would make the build much slower for no new answer. Each kept
entity's rows are exactly what `obsrepo intervals` prints for it (one row per interval; a merged
array's interval names its first contributor). A full build computes them for every such
entity, an update for the entities it reduces again (`entity_table`: every entity with a period
is among them), so an update equals a full build (tested).
"""

from __future__ import annotations

import json
from typing import Any

COLUMNS = ["entity_id", "field", "valid_from", "valid_until", "value_json", "observation_id"]
PERIODIC = "(o.valid_from IS NOT NULL OR o.valid_until IS NOT NULL)"


def refresh_intervals(con: Any, relation: str, special: list[Any], policies: dict[tuple[str, str], str],
                      survivors: list[str] | None) -> None:
    """The rows of the entities with a period among `survivors` (None: every entity); the caller
    has deleted their old rows."""
    from ..format.intervals import field_intervals
    from ..format.reduce import merge_map, retracted_ids, survivor
    from .reducer_rows import PLAIN_ROW, plain_obs

    merges = merge_map(special, retracted_ids(special))
    periodic = {survivor(row[0], merges) for row in con.execute(
        f"SELECT DISTINCT o.entity FROM {relation} AS o WHERE o.entity IS NOT NULL AND {PERIODIC}").fetchall()}
    if survivors is not None:
        periodic &= set(survivors)
    if not periodic:
        return
    family = sorted(periodic | {e for e in merges if survivor(e, merges) in periodic})
    rows = plain_obs(con.execute(f"SELECT {PLAIN_ROW} FROM {relation} AS o WHERE NOT o.special "
                                 "AND o.entity IN (SELECT unnest(?::VARCHAR[]))", [family]).fetchall())
    retracting = [o for o in special if o.retracts]  # every retraction: one may withdraw another
    by_entity: dict[str, dict[str, Any]] = {}
    for obs in [*special, *rows]:  # a retraction's target is both a special row and an ordinary one
        if obs.entity is not None and survivor(obs.entity, merges) in periodic:
            by_entity.setdefault(survivor(obs.entity, merges), {}).setdefault(obs.id, obs)
    out = []
    for target in sorted(periodic):
        observations = {o.id: o for o in retracting} | by_entity.get(target, {})
        entity_type = target.split("/", 1)[0]
        answer = field_intervals(target, sorted(observations.values(), key=lambda o: o.id),
                                 {f: p for (t, f), p in policies.items() if t == entity_type})
        for field in answer["fields"]:
            for span in field["intervals"]:
                first = span["observation_id"]
                out.append((target, field["field"], span["from"], span["until"],
                            json.dumps(span["value"], ensure_ascii=False, separators=(",", ":")),
                            first[0] if isinstance(first, list) else first))
    if out:  # one statement: the lists zipped by unnest, in order; the instants are canonical UTC text (…Z)
        con.execute("INSERT INTO field_intervals SELECT unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
                    "unnest(?::VARCHAR[])::TIMESTAMP, unnest(?::VARCHAR[])::TIMESTAMP, unnest(?::VARCHAR[])::JSON, "
                    "unnest(?::VARCHAR[])",
                    [list(column) for column in zip(*out)])

