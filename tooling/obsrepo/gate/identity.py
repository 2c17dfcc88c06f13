"""The identity rule (docs/design.md §20): a merge never joins two entities declared distinct,
and two entities already merged are never declared distinct; merges count through chains.

Merges (`DUPLICATE_OF`) make a forest: an entity is merged once and never in a cycle (the graph
rules hold that), so the entities that are one are those joined by merges, whichever way they
point (A → B and C → B make A and C one). A `DISTINCT_FROM` whose two ends are one entity is a
conflict. It is reported once, at the newest document of the change among the declaration and
the merges on the path between its two ends: on a consistent state, only a new document can
make a conflict, and the newest is the one that made it.
"""

from __future__ import annotations

from .. import errors
from ..format.report import Issue
from .judge import Document, Facts, loc

MERGE, DISTINCT = "DUPLICATE_OF", "DISTINCT_FROM"
IDENTITY_TYPES = frozenset({MERGE, DISTINCT})
RULE = "identity-conflict"

Edge = tuple[str, str, Document, int]  # source entity, target entity, facts, relation index


def identity_ends(facts: Document) -> set[str]:
    """The entities an observation's merges and declarations of distinctness join or part."""
    if facts.get("kind") != "observation" or not facts.get("entity"):
        return set()
    return {end for kind, target in facts["relations"] if kind in IDENTITY_TYPES for end in (facts["entity"], target)}


def merges_touching(facts: Document, entities: set[str]) -> set[str]:
    """The ends of `facts`'s merges that have one end among `entities` (what a walk of the
    merged entities follows next)."""
    found: set[str] = set()
    for kind, target in facts["relations"] if facts.get("kind") == "observation" else ():
        if kind == MERGE and (facts["entity"] in entities or target in entities):
            found.update((facts["entity"], target))
    return found


def identity_conflicts(live: list[tuple[str, Document]], known: Facts) -> list[Issue]:
    """The conflicts the live observations of the change `live` take part in, in the state `known`."""
    path_of = {id(facts): path for path, facts in live}
    starts = sorted({end for _path, facts in live for end in identity_ends(facts)})
    done: set[str] = set()
    issues: list[Issue] = []
    for start in starts:
        if start in done:
            continue
        members, joined = _merged(start, known)
        done |= members
        for declared in _declarations(members, known):
            path = _path(joined, declared[0], declared[1])
            ours = [edge for edge in (declared, *path) if id(edge[2]) in path_of]
            if not ours:
                continue
            newest = max(ours, key=lambda e: (e[2]["timestamp"], e[2]["id"], e[3]))
            line, col = loc(newest[2], "relations", newest[3])
            issues.append(Issue(path_of[id(newest[2])], line, col, errors.IDENTITY_CONFLICT, RULE,
                                _message(newest, declared, path)))
    return sorted(set(issues), key=lambda i: (i.path, i.line, i.col, i.message))


def _merged(start: str, known: Facts) -> tuple[set[str], dict[str, list[tuple[str, Edge]]]]:
    """The entities one with `start`, and the merges joining them (both ways, by entity)."""
    members, todo = {start}, [start]
    joined: dict[str, list[tuple[str, Edge]]] = {}
    seen: set[tuple[int, int]] = set()
    while todo:
        entity = todo.pop()
        edges = [(entity, target, facts, index) for facts in known.about(entity)
                 for index, (kind, target) in enumerate(facts["relations"]) if kind == MERGE]
        edges += [(facts["entity"], entity, facts, index) for facts in known.referring(entity)
                  for index, (kind, target) in enumerate(facts["relations"]) if kind == MERGE and target == entity]
        for edge in edges:
            if (id(edge[2]), edge[3]) in seen:
                continue
            seen.add((id(edge[2]), edge[3]))
            source, target = edge[0], edge[1]
            joined.setdefault(source, []).append((target, edge))
            joined.setdefault(target, []).append((source, edge))
            for end in (source, target):
                if end not in members:
                    members.add(end)
                    todo.append(end)
    return members, joined


def _declarations(members: set[str], known: Facts) -> list[Edge]:
    """The live `DISTINCT_FROM` relations between two of `members`."""
    return [(entity, target, facts, index) for entity in sorted(members) for facts in known.about(entity)
            for index, (kind, target) in enumerate(facts["relations"]) if kind == DISTINCT and target in members]


def _path(joined: dict[str, list[tuple[str, Edge]]], source: str, target: str) -> list[Edge]:
    """The merges on the way from `source` to `target` (a forest holds one way at most)."""
    back: dict[str, tuple[str, Edge] | None] = {source: None}
    todo = [source]
    while todo and target not in back:
        entity = todo.pop()
        for other, edge in joined.get(entity, ()):
            if other not in back:
                back[other] = (entity, edge)
                todo.append(other)
    path: list[Edge] = []
    step = back.get(target)
    while step is not None:
        path.append(step[1])
        step = back[step[0]]
    return path[::-1]


def _message(newest: Edge, declared: Edge, path: list[Edge]) -> str:
    entity, other, facts, _index = declared
    if not path:
        return f"{entity} is declared distinct from itself"
    chain = ", ".join(f"{source} → {target}" for source, target, _facts, _index in path)
    if newest is declared:
        return f"{entity} and {other} are already one entity (merged: {chain})"
    return (f"merging {newest[0]} into {newest[1]} makes one entity of {entity} and {other}, "
            f"declared distinct by {facts['id']} (merges: {chain})")
