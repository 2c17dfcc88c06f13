"""The `entity_snapshots` table: every entity's snapshot at the indexed commit, kept up to date.

A full build reduces every entity (the SQL reducer, `sqlreduce`). An update reduces again only
the entities whose observations came or went, with the entities merged into them; when a
retraction or a merge came or went, an entity schema changed, or commits were forgotten, it
reduces everything (those change other entities' snapshots). Either way the table equals a
full build's (tested). Snapshots here are over every tenant's observations: what an unbound
caller sees (`sql` is refused to a bound one). The `contested_fields` table (docs/design.md §19,
the default window) follows the same entities: a contest depends only on an entity's family's
rows, the special rows, the policies and the commit's time, as its snapshot does; so do the
`field_intervals` table's rows (`interval_table`).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from ..gitstore import Git
from .schema import NOW

CURRENT = f"(SELECT * FROM obs_versions WHERE removed_seq = {NOW})"
COLUMNS = ["entity_id", "entity_type", "snapshot", "provenance", "observation_count", "last_observation_at", "deleted"]


def refresh_snapshots(git: Git, con: Any, target: str, result: Any) -> None:
    from ..format.reduce import merge_map, retracted_ids, survivor
    from .interval_table import refresh_intervals
    from .reducer_rows import CANDIDATES, all_policies, commit_instant, special_rows
    from .sqlreduce import reduce_all

    affected = None if result.full or result.truncated else _affected(result)
    if affected is not None:
        # an entity with a period may change with the commit's time alone (docs/design.md §19)
        affected |= {row[0] for row in con.execute(
            f"SELECT DISTINCT entity FROM {CURRENT} WHERE entity IS NOT NULL "
            "AND (valid_from IS NOT NULL OR valid_until IS NOT NULL)").fetchall()}
    if affected is not None and not affected:
        return
    special = special_rows(con, CURRENT)
    policies = all_policies(git, target)
    valid_at = commit_instant(git, target)  # the indexed commit's time decides periods (docs/design.md §19)
    if affected is None:
        snaps = reduce_all(con, CANDIDATES.format(relation=CURRENT, where="TRUE"), [], special, policies, target,
                           valid_at=valid_at)
        con.execute("DELETE FROM entity_snapshots")
        con.execute("DELETE FROM contested_fields")
        con.execute("DELETE FROM field_intervals")
        _contests(con, special, policies, valid_at, "TRUE", [], None)
        refresh_intervals(con, CURRENT, special, policies, None)
    else:
        merges = merge_map(special, retracted_ids(special))
        survivors = {survivor(e, merges) for e in affected}
        family = sorted(survivors | {e for e in merges if survivor(e, merges) in survivors})
        snaps = reduce_all(con, CANDIDATES.format(relation=CURRENT, where="o.entity IN (SELECT unnest(?::VARCHAR[]))"),
                           [family], special, policies, target, valid_at=valid_at)
        con.execute("DELETE FROM entity_snapshots WHERE entity_id IN (SELECT unnest(?::VARCHAR[]))",
                    [sorted(survivors | affected)])
        con.execute("DELETE FROM contested_fields WHERE entity_id IN (SELECT unnest(?::VARCHAR[]))",
                    [sorted(survivors | affected)])
        con.execute("DELETE FROM field_intervals WHERE entity_id IN (SELECT unnest(?::VARCHAR[]))",
                    [sorted(survivors | affected)])
        _contests(con, special, policies, valid_at, "o.entity IN (SELECT unnest(?::VARCHAR[]))", [family],
                  sorted(survivors))
        refresh_intervals(con, CURRENT, special, policies, sorted(survivors))
    from .rows import insert_rows

    rows = [{"entity_id": s["entity_id"], "entity_type": s["entity_type"], "snapshot": _json(s["snapshot"]),
             "provenance": _json(s["provenance"]), "observation_count": s["observation_count"],
             "last_observation_at": _moment(s["last_observation_at"]), "deleted": s["deleted"]} for s in snaps.values()]
    insert_rows(con, "entity_snapshots", COLUMNS, rows)


def _contests(con: Any, special: list[Any], policies: dict[tuple[str, str], str], valid_at: str | None,
              where: str, params: list[Any], survivors: list[str] | None) -> None:
    """The contests of the entities read (`survivors`: only those; None: every one), a row per
    challenger in the reducer's order."""
    from ..format.contested import DEFAULT_WINDOW, parse_window
    from .sqlcontest import CANDIDATES as CONTEST_CANDIDATES
    from .sqlcontest import contests_all

    found = contests_all(con, CONTEST_CANDIDATES.format(relation=CURRENT, where=where), params, special, policies,
                         parse_window(DEFAULT_WINDOW), valid_at=valid_at,
                         wanted="TRUE" if survivors is None else "eid IN (SELECT unnest(?::VARCHAR[]))",
                         wanted_params=[] if survivors is None else [survivors])
    rows = [(c["entity_id"], c["field"], c["winner"]["observation_id"], challenger["observation_id"])
            for c in found for challenger in c["challengers"]]
    if rows:  # one statement: the lists zipped by unnest, in order
        con.execute("INSERT INTO contested_fields SELECT unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
                    "unnest(?::VARCHAR[]), unnest(?::VARCHAR[])", [list(column) for column in zip(*rows)])


def _affected(result: Any) -> set[str] | None:
    """Entities whose observations this update added or removed; None when everything must be
    reduced again (a retraction or merge came or went, or an entity schema changed)."""
    if result.schemas_changed or result.touched_special:
        return None
    return set(result.touched)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _moment(text: str | None) -> datetime | None:
    if text is None:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc).replace(tzinfo=None)
