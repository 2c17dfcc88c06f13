"""`obsrepo diff`: what a change between two commits means for the truth (docs/design.md §12).

Only what BASE..HEAD touches is reduced, at both commits: the entities of observations added
or removed, the entities whose observations a retraction withdraws, the targets of merges,
and every entity of the merge families of those (at either commit) — or every entity when an
entity schema changed (a policy can change any snapshot). Both commits are read through read
scopes of one index: a commit off the indexed chain is an overlay (`overlay.py`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..format.reduce import Obs, counts, merge_map, reduce_entity, retracted_ids, survivor
from ..format.vocabulary import CORRECTION_PRIORITY
from ..gate.sources import DOCUMENT_ROOTS
from ..gitstore import Git
from ..index.reducer_rows import PLAIN_ROW, ROW, as_obs, commit_instant, load_policies, plain_obs, special_rows
from .diff_check import change_problems, comprehension_changes
from .diff_contests import opened_and_closed
from .scope import ReadScope

ENTITY_SCHEMAS = "schemas/entities/"
_EXTRA = "o.path, o.type, o.source, o.corrects"


@dataclass
class Side:
    """One commit's view of the touched entities."""

    sha: str
    rows: dict[str, Obs] = field(default_factory=dict)  # the observations read, by id
    info: dict[str, tuple] = field(default_factory=dict)  # id → (path, type, source, corrects) of changed rows
    merges: dict[str, str] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # survivor → reduce_entity(explain=True)
    counts: dict[str, int] = field(default_factory=dict)  # touched entity → its observations
    special: list[Obs] = field(default_factory=list)  # the merges and retractions read
    families: dict[str, list[Obs]] = field(default_factory=dict)  # survivor → its ordinary rows
    valid_at: str | None = None  # the commit's time: a period counts where it holds it (docs/design.md §19)

    def state(self, entity: str) -> tuple[str, Any]:
        """("live", result) | ("deleted", result) | ("merged", survivor) | ("absent", None)."""
        target = survivor(entity, self.merges)
        if target != entity:
            return "merged", target
        result = self.results.get(entity)
        family = [e for e in self.counts if survivor(e, self.merges) == entity]
        if result is None or not any(self.counts[e] for e in family):
            return "absent", None
        return ("deleted" if result["deleted"] else "live"), result


def review(base_scope: ReadScope, head_scope: ReadScope, check_scope: ReadScope | None) -> dict[str, Any]:
    """The review of BASE..HEAD (the scopes' commits); `check_scope` (HEAD, no tenant binding)
    supplies what the check of the change needs; None leaves the check out."""
    git = head_scope.git
    base, head = Side(base_scope.at_commit), Side(head_scope.at_commit)
    changes = git.diff(base.sha, head.sha, "--", *DOCUMENT_ROOTS, ENTITY_SCHEMAS)
    added_paths = sorted(c.path for c in changes if c.path.startswith("observations/") and c.status in ("A", "M", "T"))
    removed_paths = sorted(c.path for c in changes if c.path.startswith("observations/") and c.status in ("D", "M", "T"))
    schema_changed = any(c.path.startswith(ENTITY_SCHEMAS) for c in changes)

    added = _changed_rows(head_scope, head, added_paths)
    removed = _changed_rows(base_scope, base, removed_paths)
    for scope, side in ((base_scope, base), (head_scope, head)):
        special = special_rows(scope.con, "visible")
        side.rows.update({o.id: o for o in special})
        side.gone = retracted_ids(special)
        side.merges = merge_map(special, side.gone)

    touched = _touched(added + removed, base, head)
    if schema_changed:
        for scope in (base_scope, head_scope):
            touched |= {r[0] for r in scope.rows("SELECT DISTINCT entity FROM visible WHERE entity IS NOT NULL")}
    # HEAD's rows are BASE's less the removed plus the added: the touched entities are read once
    removed_ids = {o.id for o in removed}
    for obs in _rows_of(base_scope, touched):
        base.rows.setdefault(obs.id, obs)
        if obs.id not in removed_ids:
            head.rows.setdefault(obs.id, obs)
    for scope, side in ((base_scope, base), (head_scope, head)):
        side.valid_at = commit_instant(git, side.sha)
        side.counts = _counts(scope, touched)
        _reduce(scope, side, touched, explain=side is head)

    report: dict[str, Any] = {"base": base.sha, "head": head.sha, "valid": True}
    modified = {c.path for c in changes if c.status != "A" and c.status != "D"}
    report["summary"] = _summary([o for o in added if head.info[o.id][0] not in modified], head)
    report["added"] = sorted(o.id for o in added if head.info[o.id][0] not in modified)
    report["modified"] = sorted(o.id for o in added if head.info[o.id][0] in modified)
    report["removed"] = sorted(o.id for o in removed if base.info[o.id][0] not in modified)
    report["entities"] = _entities(touched, base, head)
    report["losing"] = _losing([o for o in added if o.id not in head.gone], head)
    report["retracted"] = _retracted(added, base, head)
    report["relations"] = _relations(added, removed, head)
    report["contests"] = opened_and_closed(git, touched, base, head)
    report["comprehensions"] = comprehension_changes(git, head_scope, changes)
    problems = change_problems(git, base.sha, head.sha, check_scope) if check_scope is not None else []
    if head_scope.tenant:  # a bound caller sees problems only of documents it can see
        mine = {head.info[o.id][0] for o in added} | {base.info[o.id][0] for o in removed} | {
            c["path"] for c in report["comprehensions"]}
        problems = [p for p in problems if p["path"] in mine]
    report["problems"] = problems
    report["valid"] = not any(p["severity"] == "error" for p in problems)
    return report


def _changed_rows(scope: ReadScope, side: Side, paths: list[str]) -> list[Obs]:
    if not paths:
        return []
    rows = scope.rows(f"SELECT {ROW}, {_EXTRA} FROM visible AS o WHERE o.path IN (SELECT unnest(?::VARCHAR[])) "
                      "ORDER BY o.id", [paths])
    found = []
    for row in rows:
        obs = as_obs(row[:15])
        side.rows[obs.id] = obs
        side.info[obs.id] = (row[15], row[16], row[17], tuple(row[18]))
        found.append(obs)
    return found


def _touched(changed: list[Obs], base: Side, head: Side) -> set[str]:
    touched: set[str] = set()
    for obs in changed:
        if obs.entity:
            touched.add(obs.entity)
        touched.update(target for kind, target in obs.relations if kind == "DUPLICATE_OF")
        for target in obs.retracts:
            for side in (base, head):
                hit = side.rows.get(target)
                if hit is not None and hit.entity:
                    touched.add(hit.entity)
                    touched.update(t for kind, t in hit.relations if kind == "DUPLICATE_OF")
    # whole merge families, as either commit sees them
    while True:
        survivors = {survivor(e, side.merges) for e in touched for side in (base, head)}
        grown = touched | survivors | {e for side in (base, head) for e in side.merges
                                       if survivor(e, side.merges) in survivors}
        if grown == touched:
            return touched
        touched = grown


def _rows_of(scope: ReadScope, entities: set[str]) -> list[Obs]:
    """The rows that can win a field of `entities`: those with fields. Special rows (merges,
    retractions) and retraction targets are read whole by `special_rows`; tenants matter only to
    them, so plain rows are read without."""
    if not entities:
        return []
    rows = scope.rows(f"SELECT {PLAIN_ROW} FROM visible AS o "
                      "WHERE o.entity IN (SELECT unnest(?::VARCHAR[])) AND o.fields IS NOT NULL AND NOT o.special",
                      [sorted(entities)])
    return plain_obs(rows)


def _counts(scope: ReadScope, entities: set[str]) -> dict[str, int]:
    """Observations per entity (with fields or not): whether an entity exists at a commit."""
    if not entities:
        return {}
    return dict(scope.rows("SELECT o.entity, count(*) FROM visible AS o WHERE o.entity IN (SELECT unnest(?::VARCHAR[])) "
                           "GROUP BY o.entity", [sorted(entities)]))


def _reduce(scope: ReadScope, side: Side, touched: set[str], explain: bool) -> None:
    """Each touched family reduced from its own rows and the special ones (merges, retractions)."""
    special = [o for o in side.rows.values() if o.retracts or any(k == "DUPLICATE_OF" for k, _ in o.relations)]
    special_ids = {o.id for o in special}
    families: dict[str, list[Obs]] = {}
    for obs in side.rows.values():
        if obs.entity is not None and obs.id not in special_ids:
            families.setdefault(survivor(obs.entity, side.merges), []).append(obs)
    side.special, side.families = special, families
    for entity in sorted({survivor(e, side.merges) for e in touched}):
        policies = load_policies(scope.git, side.sha, entity.split("/", 1)[0])
        side.results[entity] = reduce_entity(entity, families.get(entity, []) + special, policies,
                                             at_commit=side.sha, explain=explain, valid_at=side.valid_at)


def _tenant_text(obs: Obs) -> str:
    return ",".join(f"{k}={v}" for k, v in obs.tenant) or "(none)"


def _summary(added: list[Obs], head: Side) -> dict[str, Any]:
    def counts(values: list[str]) -> dict[str, int]:
        return dict(sorted(Counter(values).items()))

    return {
        "observations_added": len(added),
        "by_type": counts([head.info[o.id][1] or "(none)" for o in added]),
        "by_source": counts([head.info[o.id][2] for o in added]),
        "by_tenant": counts([_tenant_text(o) for o in added]),
    }


# -- entities ------------------------------------------------------------------------------

def _entities(touched: set[str], base: Side, head: Side) -> list[dict[str, Any]]:
    entries = []
    for entity in sorted(touched):
        (old_kind, old), (new_kind, new) = base.state(entity), head.state(entity)
        entry: dict[str, Any] = {"entity_id": entity}
        if new_kind == "merged":
            if (old_kind, old) == (new_kind, new):
                continue
            entry.update(change="merged", into=new, fields=[])
        elif new_kind == "live" and old_kind != "live":
            entry.update(change="restored" if old_kind == "deleted" else "created",
                         fields=_fields({}, new, base, head))
        elif new_kind == "live":
            fields = _fields(old["snapshot"], new, base, head, old["provenance"])
            if not fields:
                continue
            entry.update(change="changed", fields=fields)
        elif old_kind == "live":  # deleted, or every observation gone
            entry.update(change="deleted", fields=_gone_fields(old, new, base, head))
        elif new_kind == "deleted" and old_kind != "deleted":  # appears deleted (new, or split from a merge)
            entry.update(change="deleted", fields=[])
        else:
            continue
        entries.append(entry)
    return entries


def _ids(provenance: Any) -> list[str]:
    if provenance is None:
        return []
    return list(provenance) if isinstance(provenance, list) else [provenance]


def _fields(old: dict[str, Any], new: dict[str, Any], base: Side, head: Side,
            old_provenance: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    old_provenance = old_provenance or {}
    changed = []
    for name in sorted(set(old) | set(new["snapshot"])):
        before, after = old.get(name), new["snapshot"].get(name)
        if name in old and name in new["snapshot"] and before == after:
            continue
        previous = _ids(old_provenance.get(name))
        lines = new["explain"].get(name, [])
        winners = [line["observation_id"] for line in lines if line["won"]]
        if lines and winners:
            withdrawn = [i for i in previous if i in head.gone and i not in {line["observation_id"] for line in lines}]
            rule = "retracted" if withdrawn else _rule(new, name, lines, set(previous))
            carrier = head.rows.get(winners[0])
            if (carrier is not None and carrier.entity and carrier.entity != new["entity_id"]
                    and survivor(carrier.entity, base.merges) != new["entity_id"]):
                rule = "merged"  # the value came with an entity merged into this one
            winner: Any = winners if isinstance(new["provenance"].get(name), list) else winners[0]
        else:  # nothing carries the field any more
            rule, winner = _withdrawal(previous, head)
        changed.append({"field": name, "old": before, "new": after, "observation_id": winner, "rule": rule})
    return changed


def _gone_fields(old: dict[str, Any], new: dict[str, Any] | None, base: Side, head: Side) -> list[dict[str, Any]]:
    if new is not None and new["deleted"]:
        gate = new["explain"]["_deleted"]
        winner, rule = gate[0]["observation_id"], "deleted"
    else:
        winner, rule = None, "retracted"
    fields = []
    for name, value in sorted(old["snapshot"].items()):
        if new is None or not new["deleted"]:
            rule, winner = _withdrawal(_ids(old["provenance"].get(name)), head)
        fields.append({"field": name, "old": value, "new": None, "observation_id": winner, "rule": rule})
    return fields


def _withdrawal(previous: list[str], head: Side) -> tuple[str, str | None]:
    """Why a value is gone with nothing in its place: a retraction withdrew its observation, or
    the observation's file is gone (a change `check` refuses)."""
    for obs_id in previous:
        if obs_id in head.gone:
            by = sorted(o.id for o in head.rows.values() if obs_id in o.retracts and o.id not in head.gone)
            return "retracted", by[0] if by else None
    return "removed", previous[0] if previous else None


def _rule(result: dict[str, Any], name: str, lines: list[dict[str, Any]], rivals: set[str]) -> str:
    """What decided between the winner and its rival (the previous winner when it still stands,
    else the runner-up): correction, priority, specificity, timestamp, id, or the field's policy."""
    top = next(line for line in lines if line["won"])
    losers = [line for line in lines if not line["won"]]
    rival = next((line for line in losers if line["observation_id"] in rivals), losers[0] if losers else None)
    if rival is None:
        return "only"
    if top["priority"] >= CORRECTION_PRIORITY > rival["priority"]:
        return "correction"
    rule_text = lines[0]["rule"]
    for policy in ("merge_array", "last_write", "most_specific"):
        if rule_text.startswith(policy):
            return policy
    if top["priority"] != rival["priority"]:
        return "priority"
    if top["specificity"] != rival["specificity"]:
        return "specificity"
    if top["timestamp"] != rival["timestamp"]:
        return "timestamp"
    return "id"


# -- observations that change nothing, retractions, relations ------------------------------

def _losing(added: list[Obs], head: Side) -> list[dict[str, Any]]:
    losing = []
    for obs in added:
        names = sorted(n for n in obs.fields if n != "_deleted")
        if not obs.entity or not names or not counts(obs, None, head.valid_at):
            continue  # a period that does not hold HEAD's time neither wins nor loses there
        target = survivor(obs.entity, head.merges)
        result = head.results.get(target)
        if result is None:
            continue
        if result["deleted"]:
            losing.append({"observation_id": obs.id, "entity_id": target, "deleted": True, "fields": []})
            continue
        if any(obs.id in _ids(result["provenance"].get(n)) for n in names):
            continue
        fields = []
        for name in names:
            lines = result["explain"].get(name, [])
            winner = next((line["observation_id"] for line in lines if line["won"]), None)
            fields.append({"field": name, "value": obs.fields[name], "current": result["snapshot"].get(name),
                           "winner": winner, "rule": _rule(result, name, lines, {obs.id}) if winner else "only"})
        losing.append({"observation_id": obs.id, "entity_id": target, "deleted": False, "fields": fields})
    return losing


def _retracted(added: list[Obs], base: Side, head: Side) -> list[dict[str, Any]]:
    entries = []
    for obs in added:
        if obs.id in head.gone:
            continue
        for target_id in obs.retracts:
            target = head.rows.get(target_id)
            if target is None or target.tenant != obs.tenant:
                continue
            winning: list[str] = []
            if target.entity:
                result = base.results.get(survivor(target.entity, base.merges))
                if result is not None and not result["deleted"]:
                    winning = sorted(n for n, p in result["provenance"].items() if target_id in _ids(p))
            entries.append({
                "observation_id": obs.id, "target": target_id, "entity_id": target.entity,
                "fields": dict(sorted(target.fields.items())), "was_winning": winning,
                "relations": [{"type": k, "target_entity_id": t} for k, t in target.relations],
            })
    return entries


def _relations(added: list[Obs], removed: list[Obs], head: Side) -> list[dict[str, Any]]:
    relations = []
    for obs in added:
        if obs.id in head.gone:
            continue
        for kind, target in obs.relations:
            relations.append({"change": "added", "type": kind, "source_entity_id": obs.entity,
                              "target_entity_id": target, "observation_id": obs.id})
    for obs in removed:
        for kind, target in obs.relations:
            if obs.id not in head.rows:
                relations.append({"change": "removed", "type": kind, "source_entity_id": obs.entity,
                                  "target_entity_id": target, "observation_id": obs.id})
    return sorted(relations, key=lambda r: (r["source_entity_id"] or "", r["type"], r["target_entity_id"], r["observation_id"]))


def default_base(git: Git, head: str) -> str:
    """The merge base of HEAD with the default branch: origin/HEAD's branch, else main, else
    master (local branch first, then origin's)."""
    candidates = []
    origin = git.run("symbolic-ref", "-q", "refs/remotes/origin/HEAD", check=False).decode().strip()
    if origin:
        candidates.append(origin)
    candidates += ["refs/heads/main", "refs/remotes/origin/main", "refs/heads/master", "refs/remotes/origin/master"]
    for ref in candidates:
        sha = git.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False).decode().strip()
        if sha:
            return git.merge_base(sha, head)
    from ..errors import NotFoundError

    raise NotFoundError("no default branch to compare with (origin/HEAD, main or master): name BASE",
                        parameter="BASE")
