"""What the reducer reads from the index: observation rows as `Obs`, the few special rows
(retractions, their targets, merges), candidate rows for the SQL reducer, and per-field
policies from the entity schemas of a commit. Used by the index (the `entity_snapshots`
table) and by the readers alike; `relation` names the rows to read (a table, a view or a
parenthesised query, aliased `o` here)."""

from __future__ import annotations

import json
from typing import Any

from ..format.reduce import Obs
from ..format.vocabulary import ENTITY_SCHEMAS_DIR, POLICIES, entity_schema_path
from ..gitstore import Git


def instant(column: str) -> str:
    """An instant as the reducer writes it (`format_timestamp`: UTC, `Z`, microseconds only when
    there are any), spelled by DuckDB: no datetime parsed and printed again in Python for each
    row. NULL stays NULL (a period's end not written)."""
    return f"""strftime({column}, '%Y-%m-%dT%H:%M:%S')
      || CASE WHEN epoch_us({column}) % 1000000 <> 0 THEN strftime({column}, '.%f') ELSE '' END || 'Z'"""


INSTANT = instant("o.timestamp")
PERIOD = f"{instant('o.valid_from')}, {instant('o.valid_until')}"  # docs/design.md §19

ROW = f"""o.id, {INSTANT}, o.entity, o.fields, o.priority, o.specificity,
    o.retracts, o.relations, o.tenant_org, o.tenant_project, o.tenant_agent, o.tenant_user, {PERIOD}, o.source"""

# an ordinary row (neither retracting nor merging, `NOT o.special`): the reducer reads its
# retractions, merges and tenant only through the special rows, so only these columns
PLAIN_ROW = f"o.id, {INSTANT}, o.entity, o.fields, o.priority, o.specificity, {PERIOD}, o.source"

CANDIDATES = f"""(SELECT o.id, o.entity, o.priority, o.specificity, epoch_us(o.timestamp) AS epoch, {INSTANT} AS ts,
    o.fields, epoch_us(o.valid_from) AS vfrom, epoch_us(o.valid_until) AS vuntil FROM {{relation}} AS o WHERE {{where}})"""


def as_obs(row: tuple) -> Obs:
    obs_id, ts, entity, fields, priority, specificity, retracts, relations, org, project, agent, user, start, until, source = row
    tenant = tuple((k, v) for k, v in (("agent", agent), ("org", org), ("project", project), ("user", user)) if v is not None)
    return Obs(
        id=obs_id, timestamp=ts, entity=entity,
        fields=json.loads(fields) if fields else {}, priority=priority, specificity=specificity,
        retracts=tuple(retracts), relations=tuple((r["type"], r["target"]) for r in relations), tenant=tenant,
        valid_from=start, valid_until=until, source=source,
    )


def plain_obs(rows: list[tuple]) -> list[Obs]:
    """Ordinary rows (`PLAIN_ROW`) as `Obs`: the reducer takes what else it needs of a row
    (retractions, merges, the tenant a retraction must share) from the special rows. Their
    fields are parsed as one JSON array (a busy entity has thousands: one parse, not one each)."""
    fields = json.loads("[" + ",".join(row[3] or "{}" for row in rows) + "]")
    return [Obs(id=obs_id, timestamp=ts, entity=entity, fields=values, priority=priority, specificity=specificity,
                valid_from=start, valid_until=until, source=source)
            for (obs_id, ts, entity, _, priority, specificity, start, until, source), values in zip(rows, fields)]


def special_rows(con: Any, relation: str) -> list[Obs]:
    """Retractions, their targets and merges: few, and all the reducer needs beyond an entity's own rows."""
    special = [as_obs(r) for r in con.execute(f"SELECT {ROW} FROM {relation} AS o WHERE o.special").fetchall()]
    targets = sorted({t for o in special for t in o.retracts})
    if targets:
        known = {o.id for o in special}
        special += [as_obs(r) for r in con.execute(
            f"SELECT {ROW} FROM {relation} AS o WHERE o.id IN (SELECT unnest(?::VARCHAR[]))", [targets]).fetchall()
            if r[0] not in known]
    return special


def commit_instant(git: Git, commit: str | None) -> str | None:
    """The committer time of `commit` as the reducer writes instants: the valid time a read
    without `--as-of` answers for (docs/design.md §19). None for no commit."""
    if commit is None:
        return None
    from ..times import commit_time, format_timestamp

    return format_timestamp(commit_time(git.committed_at(commit)))


def all_policies(git: Git, commit: str) -> dict[tuple[str, str], str]:
    """(entity type, field) → policy for every entity schema in the tree of `commit`."""
    listing = git.run("ls-tree", "--name-only", "-z", commit, ENTITY_SCHEMAS_DIR, check=False).split(b"\0")
    policies: dict[tuple[str, str], str] = {}
    for raw in listing:
        name = raw.decode("utf-8", "replace").rsplit("/", 1)[-1]
        if name.endswith(".yaml"):
            entity_type = name[: -len(".yaml")]
            for field, policy in load_policies(git, commit, entity_type).items():
                policies[(entity_type, field)] = policy
    return policies


_SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {}


def schema_at(git: Git, commit: str, entity_type: str) -> dict[str, Any]:
    """`schemas/entities/<type>.yaml` in the tree of `commit`, read once per process (a commit's
    tree never changes); `{}` when it is absent or invalid (`check` reports that)."""
    key = (commit, entity_type)
    if key not in _SCHEMAS:
        from ..format.entity_schema import read_entity_schema

        path = entity_schema_path(entity_type)
        raw = git.run("cat-file", "blob", f"{commit}:{path}", check=False)
        _SCHEMAS[key] = (read_entity_schema(path, raw)[0] or {}) if raw else {}
    return _SCHEMAS[key]


def load_policies(git: Git, commit: str, entity_type: str) -> dict[str, str]:
    """Per-field policies of the entity schema of `commit`."""
    fields = schema_at(git, commit, entity_type).get("fields", {})
    return {name: spec["policy"] for name, spec in fields.items() if spec.get("policy") in POLICIES}
