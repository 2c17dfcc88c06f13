"""Entity snapshots and provenance from the index: candidates in SQL, reduction in `reduce`."""

from __future__ import annotations

import json
from typing import Any

from .errors import NotFoundError
from .gitstore import Git
from .query import View, tenant_filter
from .reduce import POLICIES, Obs, merge_map, reduce_entity, retracted_ids, survivor
from .times import format_timestamp

_ROW = """o.id, strftime(o.timestamp, '%Y-%m-%dT%H:%M:%S.%f'), o.entity, o.fields, o.priority, o.specificity,
    o.retracts, o.relations, o.tenant_org, o.tenant_project, o.tenant_agent, o.tenant_user"""


def _obs(row: tuple) -> Obs:
    from datetime import datetime, timezone

    obs_id, ts, entity, fields, priority, specificity, retracts, relations, org, project, agent, user = row
    tenant = tuple((k, v) for k, v in (("agent", agent), ("org", org), ("project", project), ("user", user)) if v is not None)
    return Obs(
        id=obs_id, timestamp=format_timestamp(datetime.fromisoformat(ts).replace(tzinfo=timezone.utc)), entity=entity,
        fields=json.loads(fields) if fields else {}, priority=priority, specificity=specificity,
        retracts=tuple(retracts), relations=tuple((r["type"], r["target"]) for r in relations), tenant=tenant,
    )


def all_policies(git: Git, commit: str) -> dict[tuple[str, str], str]:
    """(entity type, field) → policy for every entity schema in the tree of `commit`."""
    listing = git.run("ls-tree", "--name-only", "-z", commit, "schemas/entities/", check=False).split(b"\0")
    policies: dict[tuple[str, str], str] = {}
    for raw in listing:
        name = raw.decode("utf-8", "replace").rsplit("/", 1)[-1]
        if name.endswith(".yaml"):
            entity_type = name[: -len(".yaml")]
            for field, policy in load_policies(git, commit, entity_type).items():
                policies[(entity_type, field)] = policy
    return policies


CANDIDATES = """(SELECT o.id, o.entity, o.priority, o.specificity, epoch_us(o.timestamp) AS epoch,
    strftime(o.timestamp, '%Y-%m-%dT%H:%M:%S')
      || CASE WHEN epoch_us(o.timestamp) % 1000000 <> 0 THEN strftime(o.timestamp, '.%f') ELSE '' END || 'Z' AS ts,
    o.fields FROM {relation} AS o WHERE {where})"""


def all_snapshots(con: Any, git: Git, view: View, tenant: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every entity's snapshot at the view's commit, reduced in SQL (`sqlreduce`)."""
    from .sqlreduce import reduce_all

    where, params = tenant_filter(tenant)
    candidates = CANDIDATES.format(relation=view.sql, where=where)
    return reduce_all(con, candidates, view.params + params, special_rows(con, view, tenant),
                      all_policies(git, view.at_commit), at_commit=view.at_commit)


_POLICIES: dict[tuple[str, str], dict[str, str]] = {}


def load_policies(git: Git, commit: str, entity_type: str) -> dict[str, str]:
    """Per-field policies from `schemas/entities/<type>.yaml` in the tree of `commit` (a commit's
    tree never changes, so each is read once per process)."""
    key = (commit, entity_type)
    if key not in _POLICIES:
        _POLICIES[key] = _read_policies(git, commit, entity_type)
    return _POLICIES[key]


def _read_policies(git: Git, commit: str, entity_type: str) -> dict[str, str]:
    from .entity_schema import read_entity_schema

    raw = git.run("cat-file", "blob", f"{commit}:schemas/entities/{entity_type}.yaml", check=False)
    if not raw:
        return {}
    schema, _issues = read_entity_schema(f"schemas/entities/{entity_type}.yaml", raw)
    return {name: spec["policy"] for name, spec in (schema or {}).get("fields", {}).items() if spec.get("policy") in POLICIES}


def special_rows(con: Any, view: View, tenant: dict[str, str]) -> list[Obs]:
    """Retractions, their targets and merges: few, and all the reducer needs beyond an entity's own rows."""
    where, params = tenant_filter(tenant)
    visible = f"{view.sql} AS o"
    special = [_obs(r) for r in con.execute(f"SELECT {_ROW} FROM {visible} WHERE {where} AND o.special",
                                            view.params + params).fetchall()]
    targets = sorted({t for o in special for t in o.retracts})
    if targets:
        known = {o.id for o in special}
        special += [_obs(r) for r in con.execute(
            f"SELECT {_ROW} FROM {visible} WHERE {where} AND o.id IN (SELECT unnest(?::VARCHAR[]))",
            view.params + params + [targets]).fetchall() if r[0] not in known]
    return special


def snapshot(con: Any, git: Git, view: View, entity: str, tenant: dict[str, str], as_of: str | None = None,
             explain: bool = False) -> dict[str, Any]:
    where, params = tenant_filter(tenant)
    visible = f"{view.sql} AS o"
    # merges and retractions are few: read them all, then only the entities that matter
    special_obs = special_rows(con, view, tenant)
    merges = merge_map(special_obs, retracted_ids(special_obs))
    target = survivor(entity, merges)
    family = sorted({e for e in merges if survivor(e, merges) == target} | {target, entity})
    rows = con.execute(
        f"SELECT {_ROW} FROM {visible} WHERE {where} AND o.entity IN (SELECT unnest(?::VARCHAR[]))",
        view.params + params + [family],
    ).fetchall()
    observations = {o.id: o for o in map(_obs, rows)}
    for extra in special_obs:
        observations.setdefault(extra.id, extra)
    if not any(o.entity in family for o in observations.values()) and not _ever_known(con, entity, tenant):
        raise NotFoundError(f"entity '{entity}' does not exist", code="ENTITY_NOT_FOUND", entity=entity)
    policies = load_policies(git, view.at_commit, target.split("/", 1)[0])
    return reduce_entity(entity, observations.values(), policies, as_of=as_of, at_commit=view.at_commit, explain=explain)


def _ever_known(con: Any, entity: str, tenant: dict[str, str]) -> bool:
    where, params = tenant_filter(tenant)
    hit = con.execute(f"SELECT 1 FROM obs_versions AS o WHERE {where} AND o.entity = ? LIMIT 1", params + [entity]).fetchone()
    return hit is not None


def provenance(con: Any, git: Git, view: View, entity: str, field: str, tenant: dict[str, str]) -> dict[str, Any]:
    snap = snapshot(con, git, view, entity, tenant)
    if field not in snap["snapshot"]:
        raise NotFoundError(f"entity '{snap['entity_id']}' has no field '{field}'", code="FIELD_NOT_FOUND",
                            entity=snap["entity_id"], field=field)
    winner = snap["provenance"][field]
    first = winner[0] if isinstance(winner, list) else winner
    where, params = tenant_filter(tenant)
    row = con.execute(
        f"SELECT o.path, o.\"commit\", o.author, strftime(o.committed_at, '%Y-%m-%dT%H:%M:%SZ'), o.source_ref, "
        f"o.interpretation FROM {view.sql} AS o WHERE {where} AND o.id = ?",
        view.params + params + [first],
    ).fetchone()
    path, commit, author, committed_at, source_ref, interpretation = row
    policies = load_policies(git, view.at_commit, snap["entity_type"])
    return {
        "entity_id": snap["entity_id"], "field": field, "value": snap["snapshot"][field], "observation_id": winner,
        "path": path, "commit": commit, "author": author, "committed_at": committed_at, "source_ref": source_ref,
        "interpretation": interpretation, "policy": policies.get(field, "highest_priority"),
    }


def parse_as_of(value: str) -> str:
    from .times import parse_time

    return format_timestamp(parse_time(value, "--as-of"))
