"""Repository rules: what no single document can know about itself (docs/design.md §2, §8).

Unique ids, duplicate content per tenant, `corrects`/`retracts` targets of the same tenant,
relation targets that exist for the author's tenant, acyclic PART_OF / DEPENDS_ON, merges
(DUPLICATE_OF) at most once per entity and without cycles, never joining entities declared
distinct (`gate/identity.py`), comprehension citations.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from .. import errors
from ..format.report import Issue
from ..format.rules import ACYCLIC_RELATIONS, Analysis
from .identity import identity_conflicts
from .judge import Document, Facts, TreeFacts, loc, reference_targets, stewardship_targets, visible

GRAPH_TYPES = (*ACYCLIC_RELATIONS, "DUPLICATE_OF")


def in_sight(facts: Document | None, binding: dict[str, str]) -> bool:
    """Whether the rules a writer or checker bound to `binding` applies count this document
    (docs/design.md §8a): unbound, every one; bound, the valid documents its tenant can see."""
    return not binding or (facts is not None and visible(facts.get("tenant") or {}, binding))


def in_view(analyses: dict[str, Analysis], binding: dict[str, str]) -> dict[str, Analysis]:
    """The documents `binding`'s repository rules are applied to: a bound writer is judged on
    what its tenant can see, so no refusal reveals another tenant's documents; CI's unbound
    check judges them all."""
    if not binding:
        return analyses
    return {path: analysis for path, analysis in analyses.items() if in_sight(analysis.facts, binding)}


def repository_rules(analyses: dict[str, Analysis], added: set[str] | None = None,
                     change: set[str] | None = None) -> list[Issue]:
    """Every repository rule over `analyses`. `added`: the paths new to the repository (a
    duplicate is reported there, not at the document kept). `change`: the paths whose graph
    rules are asked (the rest is the state they are added to; None: every document)."""
    observations: list[tuple[str, Document]] = []
    comprehensions: list[tuple[str, Document]] = []
    for path in sorted(analyses):
        facts = analyses[path].facts
        if facts is None:
            continue
        (observations if facts["kind"] == "observation" else comprehensions).append((path, facts))
    facts_of = dict(observations + comprehensions)
    found = (duplicates(((p, f["id"]) for p, f in observations + comprehensions), added, "id")
             + duplicates(((p, f["hash"]) for p, f in observations), added, "content"))
    issues = [Issue(path, *loc(facts_of[path], "id"), code, rule, message) for path, code, rule, message in found]
    tree = TreeFacts(observations)
    return issues + lookup_rules(observations, comprehensions, tree, change)


def lookup_rules(observations: list[tuple[str, Document]], comprehensions: list[tuple[str, Document]],
                 tree: Facts, change: set[str] | None = None) -> list[Issue]:
    """The rules that look another document up, for `observations` and `comprehensions` in the
    state `tree` (which holds them): targets, the relation graph (of the `change` only, when
    given) and citations."""
    issues = _targets(observations, tree)
    issues += graph_rules(observations if change is None else [(p, f) for p, f in observations if p in change], tree)
    return issues + _citations(comprehensions, tree)


_DUPLICATE = {"id": (errors.DUPLICATE_ID, "duplicate-id", "id '{value}' is already used by {keep}"),
              "content": (errors.DUPLICATE_CONTENT, "duplicate-content",
                          "the same content (in the same tenant) is already recorded in {keep}")}


def duplicates(values: Iterable[tuple[str, Hashable]], added: set[str] | None, what: str,
               ) -> list[tuple[str, str, str, str]]:
    """(path, code, rule, message) of each document whose `what` (its id, its content hash)
    another holds: every one of them but the one kept (already in the repository, else the
    first by path). Only the values held twice keep a list of paths."""
    first: dict[Hashable, str] = {}
    shared: dict[Hashable, list[str]] = {}
    for path, value in values:
        if value in first:
            shared.setdefault(value, [first[value]]).append(path)
        else:
            first[value] = path
    del first
    code, rule, message = _DUPLICATE[what]
    found = []
    for value, paths in shared.items():
        keep, *rest = _first_kept(paths, added)
        found += [(path, code, rule, message.format(value=value, keep=keep)) for path in rest]
    return found


def _first_kept(paths: list[str], added: set[str] | None) -> list[str]:
    """Order duplicates so the one already in the repository is kept and the new ones reported."""
    return sorted(paths, key=lambda p: (added is not None and p in added, p))


def _targets(observations: list[tuple[str, Document]], tree: Facts) -> list[Issue]:
    """What each observation corrects, retracts, gives feedback on or reclassifies, looked up by id."""
    find = tree.observation
    return [issue for path, facts in observations
            for issue in reference_targets(path, facts, find) + stewardship_targets(path, facts, find)]


def classification_warnings(analyses: dict[str, Analysis]) -> list[Issue]:
    """A declared classification below what the content rules ask for: a warning (the index
    applies the higher level anyway, docs/design.md §14)."""
    return [issue for path in sorted(analyses) for issue in classification_warning(path, analyses[path])]


def classification_warning(path: str, analysis: Analysis) -> list[Issue]:
    """`classification_warnings` of one document."""
    from ..format.report import WARNING
    from ..format.vocabulary import CLASSIFICATION_RANK

    facts = analysis.facts
    if facts is None or facts["kind"] != "observation" or "content_class" not in facts:
        return []
    declared, content = facts["declared_class"], facts["content_class"]
    if CLASSIFICATION_RANK[declared] >= CLASSIFICATION_RANK[content]:
        return []
    line, col = facts["loc"].get("classification") or facts["loc"].get("event", (1, 1))
    return [Issue(path, line, col, errors.VALIDATION_ERROR, "classification-below-content",
                  f"declared {declared}, but the content calls for {content} (a secret, a personal "
                  f"or card data word, or a secret path in source_ref); it is treated as {content}", WARNING)]


def graph_rules(change: list[tuple[str, Document]], known: Facts) -> list[Issue]:
    """The rules of the relation graph for the observations of `change` in the state `known`,
    which holds them (the tree itself, or the change `Layered` over a kept state): relation
    targets, acyclic PART_OF / DEPENDS_ON / DUPLICATE_OF, one merge per entity, no merge of entities
    declared distinct, and relations of
    other observations a retraction would leave without a target. Every problem is reported
    at a document of the change; with the whole tree as the change, this is `check`'s verdict."""
    live = [(p, f) for p, f in change if f["kind"] == "observation" and not known.withdrawn(f["id"])]
    ours = {id(f) for _, f in change}
    return (relation_targets(live, known) + cycles(live, known) + merges(live, known, ours)
            + identity_conflicts(live, known) + orphans(change, known, ours))


def relation_targets(live: list[tuple[str, Document]], known: Facts) -> list[Issue]:
    """A relation's target is the entity of a live observation visible to the author's tenant; a
    declaration of distinctness is about a pair, so its own entity must be one too (another
    observation's): a bound writer cannot take out of the queue, or bar the merge of, a pair it
    could never see (§20)."""
    issues = []
    for path, facts in live:
        if any(kind == "DISTINCT_FROM" for kind, _target in facts["relations"]) and not any(
                other is not facts and visible(other["tenant"], facts["tenant"]) for other in known.about(facts["entity"])):
            line, col = loc(facts, "entity")
            issues.append(Issue(path, line, col, errors.ENTITY_NOT_FOUND, "relation-target",
                                f"DISTINCT_FROM entity '{facts['entity']}' is not the entity of any other observation "
                                "in this tenant"))
        for index, (rel_type, target) in enumerate(facts["relations"]):
            if not any(visible(other["tenant"], facts["tenant"]) for other in known.about(target)):
                line, col = loc(facts, "relations", index)
                issues.append(Issue(path, line, col, errors.ENTITY_NOT_FOUND, "relation-target",
                                    f"{rel_type} target '{target}' is not the entity of any observation in this tenant"))
    return issues


Edge = tuple[str, str, str, Document, int]  # source entity, target entity, path, facts, relation index


def _edges(live: list[tuple[str, Document]]) -> dict[str, list[Edge]]:
    """The graph relations of `live`, by type."""
    edges: dict[str, list[Edge]] = {}
    for path, facts in live:
        for index, (kind, target) in enumerate(facts["relations"]):
            if kind in GRAPH_TYPES:
                edges.setdefault(kind, []).append((facts["entity"], target, path, facts, index))
    return edges


def _targets_of(known: Facts, rel_type: str, entity: str) -> set[str]:
    return {target for other in known.about(entity) for kind, target in other["relations"] if kind == rel_type}


def cycles(live: list[tuple[str, Document]], known: Facts) -> list[Issue]:
    """No cycle of one graph type; a cycle is reported once, at the newest of the change's
    relations inside it (on a consistent state, only a new relation can close one)."""
    issues = []
    by_type = _edges(live)
    for rel_type in GRAPH_TYPES:
        edges = by_type.get(rel_type)
        if not edges:
            continue
        adjacency: dict[str, set[str]] = {}  # the graph reachable from the change's relations
        todo = [edge[0] for edge in edges]
        while todo:
            node = todo.pop()
            if node not in adjacency:
                adjacency[node] = _targets_of(known, rel_type, node)
                todo.extend(adjacency[node])
        component_of: dict[str, int] = {}
        components = strongly_connected(adjacency)
        for number, component in enumerate(components):
            for node in component:
                component_of[node] = number
        inside_of: dict[int, list[Edge]] = {}
        for edge in edges:
            if component_of[edge[0]] == component_of[edge[1]]:
                inside_of.setdefault(component_of[edge[0]], []).append(edge)
        for number, component in enumerate(components):
            inside = inside_of.get(number)
            if not inside:
                continue
            source, target, path, facts, index = max(inside, key=lambda e: (e[3]["timestamp"], e[3]["id"]))
            line, col = loc(facts, "relations", index)
            members = ", ".join(sorted(component))
            issues.append(Issue(path, line, col, errors.CYCLE_DETECTED, "relation-cycle",
                                f"{rel_type} {source} → {target} closes a cycle among {members}"))
    return issues


def merges(live: list[tuple[str, Document]], known: Facts, ours: set[int]) -> list[Issue]:
    """An entity is merged (DUPLICATE_OF) once: every merge of it but the first (by timestamp,
    id) is refused, and a merge of the change whenever the state already holds another."""
    issues = []
    for source, _target, path, facts, index in _edges(live).get("DUPLICATE_OF", ()):
        mine = (facts["timestamp"], facts["id"], index)
        others = sorted((other["timestamp"], other["id"], number, target, id(other) in ours)
                        for other in known.about(source)
                        for number, (kind, target) in enumerate(other["relations"])
                        if kind == "DUPLICATE_OF" and not (other is facts and number == index))
        if any(other[:3] < mine or not other[4] for other in others):
            first = others[0]
            line, col = loc(facts, "relations", index)
            issues.append(Issue(path, line, col, errors.ENTITY_ALREADY_MERGED, "merged-twice",
                                f"{source} was already merged into {first[3]} by {first[1]}"))
    return issues


def orphans(change: list[tuple[str, Document]], known: Facts, ours: set[int]) -> list[Issue]:
    """A retraction in the change may withdraw the last observation of an entity another
    observation relates to: reported at the retraction (the relation's own document, when it
    is of the change, gets `relation-target`)."""
    issues = []
    for path, facts in change:
        if facts["kind"] != "observation" or not facts["retracts"]:
            continue
        entities = {hit["entity"] for target in facts["retracts"]
                    if (hit := known.observation(target)) is not None and hit["entity"]}
        for entity in sorted(entities):
            remaining = list(known.about(entity))
            for other in sorted(known.referring(entity), key=lambda o: str(o["id"])):
                if id(other) in ours or other["entity"] == entity:
                    continue
                if not any(visible(f["tenant"], other["tenant"]) for f in remaining):
                    line, col = loc(facts, "retracts")
                    issues.append(Issue(path, line, col, errors.ENTITY_NOT_FOUND, "relation-target",
                                        f"retracting would leave the relation of {other['id']} to '{entity}' "
                                        "without a target in its tenant"))
                    break
    return issues


def _citations(comprehensions: list[tuple[str, Document]], tree: Facts) -> list[Issue]:
    issues = []
    for path, facts in comprehensions:
        for index, cited in enumerate(facts["observations"]):
            if tree.observation(cited) is None:
                line, col = loc(facts, "observations", index)
                issues.append(Issue(path, line, col, errors.REF_NOT_FOUND, "citation",
                                    f"cites observation '{cited}', which does not exist"))
    return issues


def strongly_connected(adjacency: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (no recursion limit), nodes visited in sorted order."""
    index_of: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    counter = 0
    for root in sorted(adjacency):
        if root in index_of:
            continue
        work = [(root, iter(sorted(adjacency[root])))]
        index_of[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index_of:
                    index_of[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(adjacency[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index_of[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index_of[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components
