"""Entity questions over the index (docs/design.md §9): list, find, observations, relationships, timeline.

Every function reads through a `ReadScope` (the rows of one commit within the caller's tenant
binding, as the relation `visible`) and returns JSON-ready data in the shapes of docs/design.md §9.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import OrderedDict
from datetime import datetime, timezone
from operator import itemgetter
from typing import Any

from ..errors import NotFoundError, UsageError
from ..format.vocabulary import entity_schema_path
from ..gitstore import Git
from ..index.columns import UTC_TEXT
from ..index.reducer_rows import schema_at
from .query import RECORD_SQL, _record
from .scope import ReadScope, entity_clause
from .snapshots import snapshot
from .valid import counting

# relationships are listed by type, source, target, then observation
EDGE_ORDER = itemgetter("type", "source_entity_id", "target_entity_id", "observation_id")
IDENTIFYING_FIELDS = ("name", "legal_name", "email", "title", "display_name", "username", "handle", "slug",
                      "number", "invoice_number", "external_id", "vat_id")


def _summaries(scope: ReadScope, entity_ids: list[str], as_of: str | None = None) -> list[dict[str, Any]]:
    """Summaries of a page of entities: the index's own snapshots where they are this scope's
    (nothing withheld: no binding, ceiling, draft or expiry; the indexed commit, or a commit that
    patches it and leaves these entities' rows alone; no `as_of`), else a few reduced one by one,
    more at once in SQL (only their own rows, and those of the entities merged into them). The
    same answers either way, only the cost differs."""
    fresh = scope.stored_fresh(entity_ids) if as_of is None else []
    stored = _stored_summaries(scope, fresh) if fresh else {}
    missing = [e for e in entity_ids if e not in stored]
    reduced = _reduce_many(scope, missing, as_of) if len(missing) > 8 else {}
    snaps = {e: reduced.get(e) or _snapshot_or_empty(scope, e, as_of) for e in missing}
    summaries = {entity: {"entity_id": entity, "entity_type": entity.split("/", 1)[0],
                          "observation_count": snap["observation_count"], "last_observation_at": snap["last_observation_at"],
                          "snapshot": snap["snapshot"]} for entity, snap in snaps.items()}
    return [stored.get(entity) or summaries[entity] for entity in entity_ids]


def _snapshot_or_empty(scope: ReadScope, entity: str, as_of: str | None = None) -> dict[str, Any]:
    """The entity's snapshot; one only ever named by a relationship (no row of its own, say a
    neighbour) reads as an empty one rather than ending the whole answer."""
    try:
        return snapshot(scope, entity, as_of)
    except NotFoundError:
        return {"observation_count": 0, "last_observation_at": None, "snapshot": {}}


def _stored_summaries(scope: ReadScope, entity_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The summaries `entity_snapshots` holds for these entities (only those `stored_fresh`
    allows: it was reduced over every tenant's rows at the indexed commit)."""
    import json

    rows = scope.rows(f"SELECT entity_id, observation_count, {UTC_TEXT.format('last_observation_at')}, snapshot "
                      "FROM entity_snapshots WHERE entity_id IN (SELECT unnest(?::VARCHAR[]))", [entity_ids])
    return {entity: {"entity_id": entity, "entity_type": entity.split("/", 1)[0], "observation_count": count,
                     "last_observation_at": last, "snapshot": json.loads(snap)} for entity, count, last, snap in rows}


def _reduce_many(scope: ReadScope, entity_ids: list[str], as_of: str | None = None) -> dict[str, dict[str, Any]]:
    """Snapshots of these entities by the SQL reducer, as `all_snapshots` has them."""
    from ..format.reduce import merge_map, retracted_ids, survivor
    from ..index.reducer_rows import CANDIDATES, all_policies, commit_instant
    from ..index.sqlreduce import reduce_all

    special = scope.special()
    merges = merge_map(special, retracted_ids(special))
    wanted = set(entity_ids)
    family = sorted(wanted | {e for e in merges if survivor(e, merges) in wanted})
    return reduce_all(scope.con, CANDIDATES.format(relation="visible", where="o.entity IN (SELECT unnest(?::VARCHAR[]))"),
                      [family], special, all_policies(scope.git, scope.at_commit), at_commit=scope.at_commit,
                      as_of=as_of, valid_at=commit_instant(scope.git, scope.at_commit))


def list_entities(scope: ReadScope, entity_type: str | None = None, limit: int = 50, offset: int = 0,
                  as_of: str | None = None) -> dict[str, Any]:
    """The entities (survivors) with an observation at the valid time `as_of` (§19; without it,
    every one), summarised as of then."""
    clause, params = "o.entity IS NOT NULL" + (f" AND {counting(scope, as_of)}" if as_of is not None else ""), []
    if entity_type:
        clause += " AND o.entity_type = ?"
        params.append(entity_type)
    rows = scope.rows(f"SELECT DISTINCT o.entity FROM visible AS o WHERE {clause} ORDER BY 1", params)
    merges = _merges(scope)
    ids = sorted({e for (e,) in rows if e not in merges})  # a merged-away entity lives on in its survivor
    return {"entities": _summaries(scope, ids[offset : offset + limit], as_of), "total": len(ids),
            "limit": limit, "offset": offset}


def _merges(scope: ReadScope) -> dict[str, str]:
    from ..format.reduce import merge_map, retracted_ids

    special = scope.special()
    return merge_map(special, retracted_ids(special))


def normalize(text: str) -> str:
    """Case, accents, white space and punctuation do not matter: 'ACME Corp.' → 'acmecorp'."""
    decomposed = unicodedata.normalize("NFKD", text)
    return re.sub(r"[^0-9a-z]+", "", "".join(c for c in decomposed if not unicodedata.combining(c)).lower())


def find(scope: ReadScope, identifier: str, entity_type: str | None = None, limit: int = 50,
         offset: int = 0, as_of: str | None = None) -> dict[str, Any]:
    """The entities an identifying value of an observation that counts (§19: at `as_of`, else at
    the commit's time) names, as their survivors, summarised as of the same time."""
    wanted = normalize(identifier)
    if not wanted:
        raise UsageError("identifier has no letters or digits", parameter="identifier")
    counts = counting(scope, as_of)
    rows = scope.rows("SELECT DISTINCT o.entity, f.key, f.value FROM visible AS o, json_each(o.fields) AS f "
                      f"WHERE o.entity IS NOT NULL AND json_type(f.value) = 'VARCHAR' AND {counts}")
    keys = scope.rows(f"SELECT DISTINCT o.entity FROM visible AS o WHERE o.entity IS NOT NULL AND {counts}")
    found = set()
    for (entity,) in keys:
        key = entity.split("/", 1)[1]
        if normalize(key) == wanted or normalize(entity) == wanted:
            found.add(entity)
    import json as _json

    for entity, name, value in rows:
        if name in IDENTIFYING_FIELDS or name.endswith(("_id", "_email", "email", "_name")):
            if normalize(_json.loads(value)) == wanted:
                found.add(entity)
    from ..format.reduce import survivor

    merges = _merges(scope)
    ids = sorted({survivor(e, merges) for e in found} - {None})
    ids = [e for e in ids if entity_type is None or e.split("/", 1)[0] == entity_type]
    return {"entities": _summaries(scope, ids[offset : offset + limit], as_of), "total": len(ids),
            "limit": limit, "offset": offset}


def observations_of(scope: ReadScope, entity: str, limit: int = 50, offset: int = 0) -> dict[str, Any]:
    snap = snapshot(scope, entity)  # ENTITY_NOT_FOUND, merges
    family = _family(scope, entity)
    clause, params = entity_clause(family)
    rows = scope.rows(
        f"SELECT {RECORD_SQL}, NULL AS score, count(*) OVER () AS total FROM visible AS o "
        f"WHERE {clause} ORDER BY o.timestamp DESC, o.id DESC LIMIT ? OFFSET ?", [*params, limit, offset])
    total = rows[0][-1] if rows else scope.one(f"SELECT count(*) FROM visible AS o WHERE {clause}", params)[0]
    return {"entity_id": snap["entity_id"], "observations": [_record(r, False) for r in rows], "total": total,
            "limit": limit, "offset": offset}


def _family(scope: ReadScope, entity: str) -> list[str]:
    """The entity that `entity` resolves to, and every entity merged into it."""
    from ..format.reduce import survivor

    merges = _merges(scope)
    target = survivor(entity, merges)
    return sorted({e for e in merges if survivor(e, merges) == target} | {target})


class _Graph:
    """Every live relationship visible to a caller at one commit (retracted relations do not
    count), by source and by target entity; and, for walks, each entity's steps: the other end
    of each of its relationships (none to itself), with the relationship's place in the listing
    order, so a walk's thousands of relationships are gathered and put in order as numbers."""

    def __init__(self, edges: list[dict[str, Any]]) -> None:
        self.edges = sorted(edges, key=EDGE_ORDER)
        self.out: dict[str, list[dict[str, Any]]] = {}
        self.into: dict[str, list[dict[str, Any]]] = {}
        # (other end, place, relationship) by entity: `ahead` follows relationships out, `behind` in.
        # An observation that states one relationship twice lists it twice; a walk uses it once, so
        # a relationship's place is that of the first of its equals (adjacent in this order).
        self.ahead: dict[str, list[tuple[str, int, dict[str, Any]]]] = {}
        self.behind: dict[str, list[tuple[str, int, dict[str, Any]]]] = {}
        previous, place = None, -1
        for i, edge in enumerate(self.edges):
            key = EDGE_ORDER(edge)
            if key != previous:
                previous, place = key, i
            source, target = edge["source_entity_id"], edge["target_entity_id"]
            self.out.setdefault(source, []).append(edge)
            self.into.setdefault(target, []).append(edge)
            if source != target:
                self.ahead.setdefault(source, []).append((target, place, edge))
                self.behind.setdefault(target, []).append((source, place, edge))


# What a commit holds never changes: the graph of a (commit, binding) is kept for the next
# question about it (a long-running server asks many). A few are kept, the least recent dropped.
_GRAPHS: OrderedDict[tuple, _Graph] = OrderedDict()
_GRAPHS_KEPT = 4
_GRAPHS_LOCK = threading.Lock()


def _graph(scope: ReadScope, as_of: str | None = None) -> _Graph:
    key = (scope.at_commit, tuple(sorted(scope.tenant.items())), as_of)
    with _GRAPHS_LOCK:
        if key in _GRAPHS:
            _GRAPHS.move_to_end(key)
            return _GRAPHS[key]
    graph = _Graph(_edges(scope, as_of))
    with _GRAPHS_LOCK:
        _GRAPHS[key] = graph
        while len(_GRAPHS) > _GRAPHS_KEPT:
            _GRAPHS.popitem(last=False)
    return graph


def _edges(scope: ReadScope, as_of: str | None) -> list[dict[str, Any]]:
    """Every live relationship visible to the caller: retracted relations do not count, nor
    those of an observation whose period does not hold the valid time (§19)."""
    retracted = {r[0] for r in scope.rows("SELECT DISTINCT unnest(o.retracts) FROM visible AS o WHERE len(o.retracts) > 0")}
    rows = scope.rows(
        "SELECT o.id, o.path, o.entity, r.type, r.target FROM (SELECT o.id, o.path, o.entity, unnest(o.relations) AS r "
        f"FROM visible AS o WHERE len(o.relations) > 0 AND {counting(scope, as_of)}) AS o ORDER BY o.id, r.type, r.target")
    return [{"type": kind, "source_entity_id": source, "target_entity_id": target, "observation_id": obs_id, "path": path}
            for obs_id, path, source, kind, target in rows if obs_id not in retracted]


def relationships(scope: ReadScope, entity: str, direction: str = "both", types: tuple[str, ...] = (),
                  as_of: str | None = None) -> dict[str, Any]:
    if direction not in ("in", "out", "both"):
        raise UsageError("direction is in, out or both", parameter="direction")
    graph = _graph(scope, as_of)
    candidates = {id(e): e for side, edges in (("out", graph.out), ("in", graph.into)) if direction in (side, "both")
                  for e in edges.get(entity, ())}
    found = [dict(e) for e in candidates.values() if not types or e["type"] in types]
    found.sort(key=EDGE_ORDER)
    return {"relationships": found, "total": len(found)}


def related(scope: ReadScope, entity: str, types: tuple[str, ...] = (), direction: str = "both",
            hops: int = 1, limit: int | None = None, as_of: str | None = None) -> dict[str, Any]:
    """Breadth-first over relationships, each entity once. Entities are taken as their survivors:
    a merged-away entity is reached, and listed, only as the entity it was merged into (its
    relationships count for the survivor; the merge itself is no step). The visited set ends
    the walk, so any `hops` ≥ 1 terminates, cycles included. `limit`: list (and summarise) only
    the first entities by id; the totals and relationships count every one. The relationships
    and summaries are those of the valid time (§19: `as_of`, else the commit's time)."""
    from ..format.reduce import survivor

    if hops < 1:
        raise UsageError("hops must be at least 1", parameter="hops")
    if limit is not None and limit < 1:
        raise UsageError("limit must be at least 1", parameter="limit")
    if direction not in ("in", "out", "both"):
        raise UsageError("direction is in, out or both", parameter="direction")
    start = snapshot(scope, entity, as_of)["entity_id"]  # ENTITY_NOT_FOUND for an unknown start; merges
    merges = _merges(scope)
    members: dict[str, list[str]] = {}  # survivor → the entities merged into it
    for merged in merges:
        members.setdefault(survivor(merged, merges) or merged, []).append(merged)
    graph = _graph(scope, as_of)

    sides = [(side == "out", edges, steps_of) for side, edges, steps_of in
             (("out", graph.out, graph.ahead), ("in", graph.into, graph.behind)) if direction in (side, "both")]

    def steps(here: str) -> list[tuple[str, Any, dict[str, Any]]]:
        """(entity one step away, the relationship's key, the relationship) from `here`, as
        survivors; the key is the relationship's place in the graph when nothing is merged."""
        if not merges:  # the graph's own steps
            own: list[tuple[str, Any, dict[str, Any]]] = [step for _, _, steps_of in sides for step in steps_of.get(here, ())]
            return [step for step in own if step[2]["type"] in types] if types else own
        found: list[tuple[str, Any, dict[str, Any]]] = []
        for member in (here, *members[here]) if here in members else (here,):
            for outward, edges, _ in sides:
                for edge in edges.get(member, ()):
                    if types and edge["type"] not in types:
                        continue
                    source, target = survivor(edge["source_entity_id"], merges), survivor(edge["target_entity_id"], merges)
                    if source == target:
                        continue  # a merge (or a relation inside one merged entity) leads nowhere new
                    edge = dict(edge, source_entity_id=source, target_entity_id=target)
                    found.append((target if outward else source, (edge["observation_id"], edge["type"], source, target), edge))
        return found

    seen = {start}
    frontier = [start]
    used: dict[Any, dict] = {}
    deepest = 0
    hop = 0
    while frontier and hop < hops:
        hop += 1
        following = set()
        for here in frontier:
            for end, key, edge in steps(here):
                used[key] = edge
                if end not in seen:
                    seen.add(end)
                    following.add(end)
        if following:
            deepest = hop
        frontier = sorted(following)
    others = sorted(seen - {start})
    if merges:  # each edge a copy with survivors for ends
        rels = sorted(used.values(), key=EDGE_ORDER)
    else:  # the kept graph's own edges: in its order (their places), as copies
        rels = [dict(used[place]) for place in sorted(used)]
    # `limit`: only the first entities by id are summarised (each one a reduction); the totals
    # and the relationships still cover every entity reached
    return {"entities": _summaries(scope, others if limit is None else others[:limit], as_of), "relationships": rels,
            "total_entities": len(others), "total_relationships": len(rels), "hops_traversed": deepest}


_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})?)?$")


def strict_date(value: Any) -> str | None:
    """An ISO date or timestamp written as text, as a UTC timestamp; anything else is not a date
    (no year 6560 from a postal code, no epoch from a number)."""
    if not isinstance(value, str):
        return None
    match = _DATE.match(value.strip())
    if not match:
        return None
    year, month, day = int(match.group(1)), int(match.group(2)), int(match.group(3))
    if not 1900 <= year <= 2200:
        return None
    try:
        if match.group(4) is None:
            moment = datetime(year, month, day, tzinfo=timezone.utc)
        else:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace(" ", "T"))
            moment = moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)
    except ValueError:
        return None
    from ..times import format_timestamp

    return format_timestamp(moment)


def _event_type(field: str, declared: dict[str, str]) -> str:
    if field in declared:
        return declared[field]
    if field == "invoice_date":
        return "InvoiceIssued"
    return "".join(part.capitalize() for part in field.split("_") if part)


# a commit's tree never changes: each (commit, entity type)'s declared events are read once a process
def _declared_events(git: Git, commit: str, entity_type: str) -> dict[str, str]:
    """field → event type, as the entity schema of `commit` declares (`temporal_fields`)."""
    return {t["field"]: t["event_type"] for t in schema_at(git, commit, entity_type).get("temporal_fields", [])}


def timeline(scope: ReadScope, entity: str | None = None, event_type: str | None = None,
             after: datetime | None = None, before: datetime | None = None,
             limit: int = 1000, offset: int = 0) -> dict[str, Any]:
    """Events from date-valued snapshot fields, plus each observation's own timestamp; newest
    first, then by event id. The observations' events are filtered, counted and paged in SQL:
    only the page's are formatted (a busy entity has thousands)."""
    from ..format.reduce import _instant
    from ..times import format_timestamp

    clause = "o.entity IS NOT NULL"
    extra: list[Any] = []
    if entity:
        named, extra = entity_clause(_family(scope, entity))
        clause += f" AND {named}"
    low = format_timestamp(after) if after else None
    high = format_timestamp(before) if before else None
    events = [e for e in _field_events(scope, entity or None, clause, extra)
              if (event_type is None or e["event_type"] == event_type)
              and (low is None or _instant(e["event_timestamp"]) >= _instant(low))
              and (high is None or _instant(e["event_timestamp"]) < _instant(high))]
    total = len(events)
    conditions: list[str] = [clause]
    params: list[Any] = list(extra)
    for condition, given in (("coalesce(o.type, 'Observed') = ?", event_type), ("o.timestamp >= ?", _naive_utc(after)),
                             ("o.timestamp < ?", _naive_utc(before))):
        if given is not None:
            conditions.append(condition)
            params.append(given)
    # only the rows that can reach the page (the first by time, ties included) are spelled and
    # given their event id: a busy entity's thousands are counted and ranked, not hashed
    rows = scope.rows(
        f"SELECT o.id, {UTC_TEXT.format('o.timestamp')}, o.entity, coalesce(o.type, 'Observed'), "
        "'evt-' || substr(sha256(o.id), 1, 16) AS event_id, o.total FROM (SELECT o.id, o.timestamp, o.entity, o.type, "
        f"count(*) OVER () AS total FROM visible AS o WHERE {' AND '.join(conditions)} "
        "QUALIFY rank() OVER (ORDER BY o.timestamp DESC) <= ?) AS o ORDER BY o.timestamp DESC, event_id LIMIT ?",
        [*params, offset + limit, offset + limit])
    total += rows[0][-1] if rows else 0
    events += [{"id": event_id, "event_type": kind, "event_timestamp": when, "entity_id": entity_id, "field": None,
                "observation_id": obs_id} for obs_id, when, entity_id, kind, event_id, _ in rows]
    events.sort(key=lambda e: e["id"])  # stable sorts: event_timestamp DESC, then id
    events.sort(key=lambda e: _instant(e["event_timestamp"]), reverse=True)
    return {"events": events[offset : offset + limit], "total": total}


def _field_events(scope: ReadScope, entity: str | None, clause: str, params: list[Any]) -> list[dict[str, Any]]:
    """An event for each date-valued field of the snapshots of the entities `clause` selects:
    `entity`'s alone when it is given (every entity of its family reduces to it; one never
    known has none, and one whose rows are all gone has no fields)."""
    import hashlib

    if entity is not None:
        try:
            snaps = [snapshot(scope, entity)]
        except NotFoundError:
            snaps = []
    else:
        entity_ids = [r[0] for r in scope.rows(f"SELECT DISTINCT o.entity FROM visible AS o WHERE {clause} ORDER BY 1", params)]
        snaps = [snapshot(scope, entity_id) for entity_id in entity_ids]
    events = []
    done = set()
    for snap in snaps:
        if snap["entity_id"] in done:
            continue
        done.add(snap["entity_id"])
        declared = _declared_events(scope.git, scope.at_commit, snap["entity_type"])
        for name, value in snap["snapshot"].items():
            when = strict_date(value)
            if when is None:
                continue
            digest = hashlib.sha256(f"{snap['entity_id']}\0{name}\0{when}".encode()).hexdigest()[:16]
            events.append({"id": f"evt-{digest}", "event_type": _event_type(name, declared), "event_timestamp": when,
                           "entity_id": snap["entity_id"], "field": name, "observation_id": snap["provenance"][name]})
    return events


def _naive_utc(moment: datetime | None) -> datetime | None:
    """A moment as the index's TIMESTAMP columns hold it (UTC, no zone)."""
    return None if moment is None else moment.astimezone(timezone.utc).replace(tzinfo=None)


def _commits_that_matter(scope: ReadScope, entity: str, commits: list[tuple]) -> set[int]:
    """Chain positions at which the entity's snapshot can change: where an observation of the
    entity, or of any entity ever merged with it, or any retraction or merge, comes or goes,
    and where the entity schema of any of their types changes. A superset is harmless (an
    unchanged snapshot records no change); a missing commit would lose one."""
    neighbours: dict[str, set[str]] = {}
    for source, relation in scope.rows("SELECT entity, unnest(relations) FROM obs_versions WHERE special AND entity IS NOT NULL"):
        if relation["type"] == "DUPLICATE_OF":
            neighbours.setdefault(source, set()).add(relation["target"])
            neighbours.setdefault(relation["target"], set()).add(source)
    family, todo = {entity}, [entity]
    while todo:
        for other in neighbours.get(todo.pop(), ()):
            if other not in family:
                family.add(other)
                todo.append(other)
    relevant = {r[0] for r in scope.rows(
        "SELECT DISTINCT unnest([o.added_seq, o.removed_seq]) FROM obs_versions AS o "
        "WHERE o.special OR o.entity IN (SELECT unnest(?::VARCHAR[]))", [sorted(family)])}
    if commits:
        seq_of = {sha: seq for seq, sha, _when, _author in commits}
        schemas = sorted({entity_schema_path(e.split("/", 1)[0]) for e in family})
        touched = scope.git.run("log", "--first-parent", "--format=%H", commits[-1][1], "--", *schemas).decode().split()
        relevant.update(seq_of[sha] for sha in touched if sha in seq_of)
    return relevant


def history(scope: ReadScope, entity: str) -> dict[str, Any]:
    """How the snapshot changed commit by commit on the indexed chain (the scope moves along it)."""
    commits = scope.rows("SELECT seq, sha, strftime(committed_at, '%Y-%m-%dT%H:%M:%SZ'), author FROM commits ORDER BY seq")
    relevant = _commits_that_matter(scope, entity, commits)
    changes = []
    previous: dict[str, Any] = {}
    known = False
    for seq, sha, when, author in commits:
        if seq not in relevant:
            continue
        try:
            scope.move_to(sha)
            snap = snapshot(scope, entity)
        except NotFoundError:
            continue
        known = True
        current = snap["snapshot"]
        for name in sorted(set(previous) | set(current)):
            old, new = previous.get(name), current.get(name)
            if old != new or (name in previous) != (name in current):
                changes.append({"commit": sha, "committed_at": when, "author": author, "field": name, "old": old,
                                "new": new, "observation_id": snap["provenance"].get(name)})
        previous = current
    if not known:
        raise NotFoundError(f"entity '{entity}' does not exist", code="ENTITY_NOT_FOUND", entity=entity)
    return {"entity_id": entity, "changes": changes}


__all__ = ["find", "history", "list_entities", "normalize", "observations_of", "related", "relationships",
           "strict_date", "timeline"]
