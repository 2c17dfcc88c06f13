"""The session memory block (docs/design.md §15): what an agent should know, cited and budgeted.

Seed 001's `buildSessionMemoryBlock`, the obsrepo way: from one read scope (one commit, the
caller's binding and ceiling), in three sections, each in an order that depends on content
only (never on row ids or the order files were written), so the same commit, inputs and
embedder give the same bytes:

1. **entities**: the named ones, then those the relevant observations are about (with a text)
   or those of the scope's observations, most recently observed first; each field of the
   reduced snapshot with its value and the observation that decided it (a `merge_array`
   field cites its first contributor);
2. **beliefs**: the comprehension documents that cite an observation of those entities or a
   relevant observation, most recently updated first (the scope already hides a belief whose
   citations a bound caller or a ceiling cannot all read);
3. **observations**: the most relevant to the text (ranked as `query --text`), else the newest.

Every fact line cites `<observation id>@<commit>`, the commit that added the observation
(CITE_HEX digits in Markdown, the full sha in JSON). The Markdown is filled section by section
while it fits `budget` tokens, counted as characters / 4; a section stops at its first item
that does not fit, and the last line says how many of each were left out. The JSON holds
exactly the items the Markdown shows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..format.reduce import Obs, merge_map, retracted_ids, survivor
from ..index.reducer_rows import CANDIDATES, commit_instant, load_policies, special_rows
from .contested import of_entities
from .query import QueryRequest, run_query, where_matching
from .scope import ReadScope

CHARS_PER_TOKEN = 4
SHARES = (0.5, 0.2, 0.3)  # of the room: entities, beliefs, observations (what one leaves goes to the next)
LEGEND = "Each fact cites observation-id@commit: `obsrepo show <id>` shows it."
CITE_HEX = 12  # a citation's commit in Markdown: git accepts any unique prefix of 7 or more
MAX_ENTITIES = 40  # entities reduced for one block: more never fit a reasonable budget
MAX_OBSERVATIONS = 60  # relevant observations fetched for one block
BELIEF_CITES = 3  # a belief's citations in Markdown (JSON lists every one)
MAX_VALUE_CHARS = 300  # a field's value in Markdown is cut here (JSON keeps it whole)


@dataclass
class RecallRequest:
    """The engine's question: `query` carries the scopes, the text and its ranking (semantic)."""

    entities: tuple[str, ...]
    query: QueryRequest
    budget: int
    match: str = "lexical"


@dataclass
class _Item:
    """One entry of a section: its Markdown lines and its JSON; `cut(n)`, when an entry can be
    shown in part (an entity with its first n fields)."""

    lines: list[str]
    data: dict[str, Any]
    cut: Callable[[int], _Item] | None = None


@dataclass
class _Section:
    key: str
    heading: str
    items: list[_Item]
    total: int
    shown: list[_Item] = field(default_factory=list)


def recall(scope: ReadScope, request: RecallRequest) -> dict[str, Any]:
    """{"json": the block's JSON, "markdown": its text}."""
    special = special_rows(scope.con, "visible")
    merges = merge_map(special, retracted_ids(special))
    named = _named(scope, request.entities, merges)
    if named:
        request.query.entities = _families(named, merges)
    relevant = run_query(scope, request.query)
    ordered, entity_total = _entity_order(scope, request, named, relevant["observations"], merges)
    as_of = request.query.as_of  # valid time (§19): the rows, snapshots and contests of that instant
    reduced = _snapshots(scope, ordered, special, merges, as_of)
    snapshots = [s for s in reduced if s["snapshot"]]  # deleted, or nothing left in view: no facts to cite
    family = _families([s["entity_id"] for s in snapshots], merges)
    belief_rows, belief_total = _belief_rows(scope, family, [o["id"] for o in relevant["observations"]])
    disputes = of_entities(scope, [s["entity_id"] for s in snapshots], as_of)
    commits = _commits(scope, {_first(p) for s in snapshots for p in s["provenance"].values()}
                       | {cited for row in belief_rows for cited in row[3]}
                       | {c["observation_id"] for d in disputes.values() for c in d["challengers"]})
    entities = [_entity_item(s, commits, disputes) for s in snapshots]
    beliefs = _belief_items(belief_rows, commits)
    observations = [_observation_item(o) for o in relevant["observations"]]
    sections = [
        _Section("entities", "## Entities", entities, entity_total - (len(reduced) - len(snapshots))),
        _Section("beliefs", "## Beliefs", beliefs, belief_total),
        _Section("observations", _observations_heading(request), observations, relevant["total"]),
    ]
    return _fit(scope.at_commit, sections, request.budget)


# -- which entities ---------------------------------------------------------------------------
def _named(scope: ReadScope, entities: Iterable[str], merges: dict[str, str]) -> list[str]:
    """The named entities' survivors, in the order named; one the caller cannot see reads as
    one that does not exist (ENTITY_NOT_FOUND)."""
    from .snapshots import snapshot

    found: list[str] = []
    for entity in entities:
        target = survivor(entity, merges)
        if scope.one("SELECT 1 FROM visible WHERE entity IN (SELECT unnest(?::VARCHAR[])) LIMIT 1",
                     [_families([target], merges)]) is None:
            snapshot(scope, entity)  # ENTITY_NOT_FOUND, or an entity known only to other commits
        if target not in found:
            found.append(target)
    return found


def _families(entities: Iterable[str], merges: dict[str, str]) -> tuple[str, ...]:
    """The entities and every entity merged into one of them."""
    wanted = set(entities)
    return tuple(sorted(wanted | {e for e in merges if survivor(e, merges) in wanted}))


def _entity_order(scope: ReadScope, request: RecallRequest, named: list[str], relevant: list[dict[str, Any]],
                  merges: dict[str, str]) -> tuple[list[str], int]:
    """The entities of the block in order (at most MAX_ENTITIES) and how many are in scope: those
    the relevant observations are about, then the most recently observed (ties by id)."""
    if named:
        return named[:MAX_ENTITIES], len(named)
    # the relevant observations passed the same scopes: their entities are among those counted
    first = list(dict.fromkeys(survivor(o["entity"], merges) for o in relevant if o["entity"] and request.query.text))
    key = ("recall entities", *scope.view_key(), request.query.scopes, request.query.as_of, tuple(sorted(merges.items())))
    recent, total = scope.remember(key, lambda: _recent_entities(scope, request.query.scopes, merges, request.query.as_of))
    return list(dict.fromkeys(first + recent))[:MAX_ENTITIES], total


def _recent_entities(scope: ReadScope, scopes: tuple[str, ...], merges: dict[str, str],
                     as_of: str | None) -> tuple[list[str], int]:
    """The MAX_ENTITIES entities of the scopes' rows most recently observed (ties by id), merged
    entities counted with their survivor, and how many there are: one aggregate over the rows,
    kept for the index generation and view (a kept-open reader asks it for every block)."""
    where, params = where_matching(scope, QueryRequest(scopes=scopes, as_of=as_of))
    target, joined = "o.entity", list[Any]()
    if merges:
        target = "coalesce(m.survivor, o.entity)"
        joined = [sorted(merges), [survivor(e, merges) for e in sorted(merges)]]
    rows = scope.rows(
        f"SELECT target, count(*) OVER () FROM (SELECT {target} AS target, max(o.timestamp) AS latest FROM visible AS o"
        + (" LEFT JOIN (SELECT unnest(?::VARCHAR[]) AS entity, unnest(?::VARCHAR[]) AS survivor) AS m"
           " ON m.entity = o.entity" if merges else "")
        + f" WHERE o.entity IS NOT NULL AND {where} GROUP BY ALL) "
        "QUALIFY row_number() OVER (ORDER BY latest DESC, target) <= ? "
        "ORDER BY latest DESC, target",  # newest first, then by id
        joined + params + [MAX_ENTITIES])
    return [entity for entity, _ in rows], (rows[0][1] if rows else 0)


def _snapshots(scope: ReadScope, entities: list[str], special: list[Obs], merges: dict[str, str],
               as_of: str | None) -> list[dict[str, Any]]:
    """The reduced snapshots of `entities`, as `snapshot` has them (an entity with no row left
    reads as an empty snapshot): the index's own `entity_snapshots` for those whose stored row is
    their snapshot here (`stored_fresh`: nothing withheld, no `as_of`), the SQL reducer over the
    rest's rows alone, with the same valid time (§19: `as_of`, else the commit's time)."""
    from ..index.sqlreduce import reduce_all

    if not entities:
        return []
    fresh = scope.stored_fresh(entities) if as_of is None else []
    rows = scope.rows("SELECT entity_id, snapshot, provenance FROM entity_snapshots "
                      "WHERE entity_id IN (SELECT unnest(?::VARCHAR[]))", [fresh]) if fresh else []
    reduced = {e: {"entity_id": e, "snapshot": json.loads(snap), "provenance": json.loads(prov)} for e, snap, prov in rows}
    kept = set(fresh)
    missing = [e for e in entities if e not in kept]
    if missing:
        policies = {(kind, name): policy for kind in sorted({e.split("/", 1)[0] for e in missing})
                    for name, policy in load_policies(scope.git, scope.at_commit, kind).items()}
        reduced.update(reduce_all(scope.con, CANDIDATES.format(relation="visible", where="o.entity IN (SELECT unnest(?::VARCHAR[]))"),
                                  [list(_families(missing, merges))], special, policies, at_commit=scope.at_commit,
                                  as_of=as_of, valid_at=commit_instant(scope.git, scope.at_commit)))
    return [reduced.get(e) or {"entity_id": e, "snapshot": {}, "provenance": {}} for e in entities]


def _first(provenance: Any) -> str:
    return str(provenance[0] if isinstance(provenance, list) else provenance)


def _commits(scope: ReadScope, ids: set[str]) -> dict[str, str]:
    """observation id → the commit that added it."""
    if not ids:
        return {}
    return dict(scope.rows('SELECT o.id, o."commit" FROM visible AS o WHERE o.id IN (SELECT unnest(?::VARCHAR[]))',
                           [sorted(ids)]))


# -- the items ----------------------------------------------------------------------------------
def _cite(observation_id: str, commit: str) -> str:
    return f"{observation_id}@{commit[:CITE_HEX]}"


def _inline(text: str) -> str:
    """One line of Markdown: every run of white space (line breaks too) is one space."""
    return " ".join(text.split())


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS - 1] + "…"


def _entity_item(snap: dict[str, Any], commits: dict[str, str], disputes: dict[tuple[str, str], dict[str, Any]],
                 keep: int | None = None) -> _Item:
    """The entity's heading and one line per field (the first `keep` fields by name); a contested
    field (docs/design.md §19) says so, with each challenger's value, source and citation: never
    printed as settled."""
    fields, lines = [], [f"### {snap['entity_id']}"]
    for name in sorted(snap["snapshot"])[:keep]:
        observation_id = _first(snap["provenance"][name])
        commit = commits[observation_id]
        entry = {"field": name, "value": snap["snapshot"][name], "observation_id": observation_id, "commit": commit}
        contest = disputes.get((snap["entity_id"], name))
        dispute = ""
        if contest is not None:
            entry["contested"] = [{"observation_id": c["observation_id"], "value": c["value"], "source": c["source"],
                                   "commit": commits[c["observation_id"]]} for c in contest["challengers"]]
            dispute = " (contested: " + "; ".join(
                f"{_value(c['value'])} from {_inline(c['source'])}, {_cite(c['observation_id'], c['commit'])}"
                for c in entry["contested"]) + ")"
        fields.append(entry)
        lines.append(f"- {_inline(json.dumps(name, ensure_ascii=False)[1:-1])}: {_value(snap['snapshot'][name])}{dispute} "
                     f"— {_cite(observation_id, commit)}")
    return _Item(lines, {"entity_id": snap["entity_id"], "fields": fields},
                 None if keep is not None else lambda n: _entity_item(snap, commits, disputes, n))


def _belief_rows(scope: ReadScope, family: tuple[str, ...], relevant: list[str]) -> tuple[list[tuple], int]:
    """Beliefs that cite an observation of the entities of `family` or one of `relevant`, most
    recently updated first (at most MAX_ENTITIES, as (id, statement, confidence, citations)),
    and how many there are; at a commit off the indexed chain, none. Citations are matched by a
    join on the beliefs' unnested citations, never by searching lists."""
    seq = scope.one("SELECT seq FROM commits WHERE sha = ?", [scope.at_commit])
    if seq is None or not (family or relevant):
        return [], 0
    hidden = ""
    if scope.tenant or scope.ceiling is not None:  # as `comprehensions`: every citation readable
        hidden = " AND c.row_id NOT IN (SELECT row_id FROM cites WHERE cited NOT IN (SELECT id FROM visible))"
    rows = scope.rows(f"""
    WITH live AS (SELECT * FROM comp_versions WHERE added_seq <= {int(seq[0])} AND removed_seq > {int(seq[0])}),
    cites AS (SELECT row_id, unnest(observations) AS cited FROM live),
    wanted AS (SELECT o.id FROM visible AS o WHERE o.entity IN (SELECT unnest(?::VARCHAR[]))
               UNION ALL SELECT unnest(?::VARCHAR[]))
    SELECT c.id, json_extract_string(c.posterior, '$.statement'), json_extract_string(c.posterior, '$.confidence'),
           c.observations, count(*) OVER () FROM live AS c
    WHERE c.row_id IN (SELECT row_id FROM cites WHERE cited IN (SELECT id FROM wanted)){hidden}
    ORDER BY c.updated DESC, c.id LIMIT ?""", [list(family), sorted(relevant), MAX_ENTITIES])
    return [row[:4] for row in rows], (rows[0][4] if rows else 0)


def _belief_items(rows: list[tuple], commits: dict[str, str]) -> list[_Item]:
    items = []
    for belief_id, statement, confidence, cited in rows:
        sources = [{"id": c, "commit": commits[c]} for c in cited if c in commits]
        if not sources:
            continue
        citations = ", ".join(_cite(s["id"], s["commit"]) for s in sources[:BELIEF_CITES])
        if len(sources) > BELIEF_CITES:
            citations += f" (+{len(sources) - BELIEF_CITES} more)"
        items.append(_Item([f"- {belief_id} ({confidence}): {_inline(statement)} — {citations}"],
                           {"id": belief_id, "statement": statement, "confidence": confidence, "observations": sources}))
    return items


def _observation_item(record: dict[str, Any]) -> _Item:
    score = record.get("score")
    scored = "" if score is None else f" (score {score})"
    return _Item([f"- {_cite(record['id'], record['commit'])} {record['timestamp']} {_inline(record['event'])}{scored}"],
                 {"id": record["id"], "commit": record["commit"], "event": record["event"], "score": score})


def _observations_heading(request: RecallRequest) -> str:
    if request.query.text:
        return f"## Observations, most relevant first ({request.match})"
    return "## Observations, newest first"


# -- the budget ---------------------------------------------------------------------------------
def _footer(counts: dict[str, int], budget: int) -> str:
    return (f"Left out for the budget of {budget} tokens: {counts['entities']} entities, {counts['beliefs']} beliefs, "
            f"{counts['observations']} observations.")


def _fit(at_commit: str, sections: list[_Section], budget: int) -> dict[str, Any]:
    """Fill the sections in order while the block fits `budget` tokens: each section may use its
    SHARES of the room, plus what the sections before it left unused (so entities never crowd
    out beliefs and observations). Room for the last line is kept with every section's total
    (what it leaves out is never more)."""
    room = budget * CHARS_PER_TOKEN
    header = f"# Recall at {at_commit[:CITE_HEX]}\n{LEGEND}"
    reserve = len(_footer({s.key: s.total for s in sections}, budget)) + 3  # "\n\n" before it, "\n" after
    used = len(header) + reserve
    if used > room:
        raise UsageError(f"budget {budget} tokens cannot hold this block's header and what it leaves out "
                         f"({-(-used // CHARS_PER_TOKEN)} tokens)", parameter="budget")
    blocks, free, limit = [header], room - used, used
    for section, share in zip(sections, SHARES):
        limit += int(free * share)  # cumulative: what a section leaves unused goes to the next
        lines: list[str] = []
        for whole in section.items:
            opening = 0 if lines else len(section.heading) + 2  # a section's heading comes with its first entry
            allowed = min(limit, room) - used - opening
            # the first entry that does not fit whole is shown in part when it can be; the rest is left out
            item = whole if _cost(whole) <= allowed else None if lines else _largest_part(whole, allowed)
            if item is None:
                break
            used += opening + _cost(item)
            lines += ([] if lines else [section.heading]) + item.lines
            section.shown.append(item)
            if item is not whole:
                break
        if lines:
            blocks.append("\n".join(lines))
    left = {s.key: max(s.total - len(s.shown), 0) for s in sections}
    blocks.append(_footer(left, budget))
    markdown = "\n\n".join(blocks) + "\n"
    assert len(markdown) <= room, (len(markdown), room)
    data = {"at_commit": at_commit, **{s.key: [item.data for item in s.shown] for s in sections}, "omitted": left}
    return {"json": data, "markdown": markdown}


def _cost(item: _Item) -> int:
    """An entry's characters in the block, each line with its line break."""
    return sum(len(line) + 1 for line in item.lines)


def _largest_part(item: _Item, room: int) -> _Item | None:
    """The largest part of `item` (at least one line besides its heading) within `room`."""
    if item.cut is None:
        return None
    best = None
    for keep in range(1, len(item.lines) - 1):
        part = item.cut(keep)
        if _cost(part) > room:
            break
        best = part
    return best
