"""`check` of everything, streamed: memory that grows by compact facts, not by documents.

Each document's own problems (its rules, its place, its classification) are found as it is
read, from the analysis cache or analysed afresh, and nothing of it is kept but its compact
facts (`facts.py`: id, content hash, entity, tenant) and, for the few documents that name
others (corrects, retracts, relations, feedback, reclassify, a comprehension's citations),
their facts whole. The repository rules then run over those: duplicate ids and contents over
the compact columns, and the rules that look a name up over `CompactTree`, which answers
`judge.Facts` from the compact facts without making a dict per document (docs/design.md §2.7).
The report is the one the rules give over every document's facts: same issues, same bytes.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..format.report import Issue
from ..format.rules import Analysis, kind_of, place
from .analysis import Judged, analyzed, through_cache
from .cache import AnalysisCache, entry_key
from .facts import Compact, FactsStore, blob_key
from .graph import classification_warning, duplicates, lookup_rules
from .judge import Document, TreeFacts
from .sources import Listed, Source

# where a rule that names another document reports: the locations a kept document keeps
_LOCATIONS = ("id", "corrects", "retracts", "relations", "feedback", "reclassify", "observations", "version",
              "corrects_items", "retracts_items", "relations_items", "reclassify_items", "observations_items")
PART = 1000  # fresh analyses marshalled together for the cache file (a part of it, see `cache.py`)


def names_others(facts: Document | None) -> bool:
    """Whether the rules need this document's facts whole: it names other documents."""
    if facts is None:
        return False
    if facts["kind"] != "observation":
        return True
    return bool(facts["corrects"] or facts["retracts"] or facts["relations"] or facts.get("feedback")
                or facts.get("reclassify"))


_OWN_ONLY = frozenset(("hash", "content_class", "declared_class"))  # an observation's, read before it is kept


def slim(facts: Document, shared: dict[Any, Any] | None = None) -> Document:
    """A kept document's facts without what only its own rules read (the locations of every
    field, an observation's content hash and classes), its entity, tenant and relations the
    same objects as every other kept document's that holds equal ones (`shared`): a quarter of
    a tree names others, and each kept dict is what a check holds per document beyond its
    compact facts."""
    share = (shared if shared is not None else {}).setdefault
    where = facts["loc"]
    kept = {key: value for key, value in facts.items() if key not in _OWN_ONLY} \
        if facts["kind"] == "observation" else dict(facts)
    kept["loc"] = {key: where[key] for key in _LOCATIONS if where.get(key)}  # `judge.loc` reads none as (1, 1)
    if facts["kind"] == "observation":
        tenant = facts["tenant"]
        kept["tenant"] = share(("tenant", *sorted(tenant.items())), tenant)
        kept["entity"] = share(facts["entity"], facts["entity"])
        kept["relations"] = [share(("relation", kind, target), [kind, target]) for kind, target in facts["relations"]]
    return kept


@dataclass
class Streamed:
    """What a streamed tree leaves: each document's compact facts (in path order), the few kept
    whole, and every document's own problems."""

    kept: dict[str, Analysis]
    known: list[tuple[str, Compact]]
    own: list[Issue]
    read: int

    def judged(self, source: Source, added: set[str] | None) -> Judged:
        """The repository rules over the tree; `added`: the paths new to the repository (a
        duplicate is reported there)."""
        rules = _duplicates(source, self.known, added)
        tree = CompactTree(self.known, self.kept)
        named = sorted((path, a.facts) for path, a in self.kept.items() if a.facts is not None)
        rules += lookup_rules([(p, f) for p, f in named if f["kind"] == "observation"],
                              [(p, f) for p, f in named if f["kind"] != "observation"], tree)
        return Judged(self.kept, [], rules, self.read, self.own)


def stream_tree(source: Source, cache: AnalysisCache, store: FactsStore,
                progress: Callable[[int, int], None] | None = None) -> Streamed:
    """Every document of `source` under its own rules, streamed; the documents read are learnt by
    `store` (a later `check --base` needs their facts)."""
    kept: dict[str, Analysis] = {}
    known: list[tuple[str, Compact]] = []
    own: list[Issue] = []
    shared: dict[Any, Any] = {}
    for item, analysis, fresh in _documents(source, cache, progress):
        own.extend(analysis.issues)
        own.extend(place(item.path, analysis))
        own.extend(classification_warning(item.path, analysis))
        facts = analysis.facts
        key = blob_key(kind_of(item.path), item.sha)
        known.append((item.path, store.learn(key, facts) if fresh else store.compact(facts)))
        if names_others(facts):
            assert facts is not None
            kept[item.path] = Analysis(analysis.kind, [], slim(facts, shared))
    known.sort(key=lambda pair: pair[0])
    return Streamed(kept, known, own, cache.missed)


def _documents(source: Source, cache: AnalysisCache, progress: Callable[[int, int], None] | None,
               ) -> Iterator[tuple[Listed, Analysis, bool]]:
    """Each regular document's analysis, from the cache or read (then True), none kept: what is
    analysed afresh goes to the cache file in marshalled parts, never as objects."""
    todo: list[Listed] = []
    for item, hit in through_cache(source, cache, todo):
        yield item, hit, False
    rows: dict[str, bytes] = {}
    records: dict[str, Any] = {}
    for item, analysis, record in analyzed(source, todo, progress):
        yield item, analysis, True
        if cache.file is None:
            continue
        key = entry_key(item.path, item.sha)
        rows[key] = marshal.dumps(analysis.to_cache())  # kept marshalled (see `cache.py`)
        if record is not None:
            records[key] = record
        if len(rows) >= PART:
            cache.put_parts(marshal.dumps(rows), marshal.dumps(records), len(rows))
            rows, records = {}, {}
    if rows:
        cache.put_parts(marshal.dumps(rows), marshal.dumps(records), len(rows))


def _duplicates(source: Source, known: list[tuple[str, Compact]], added: set[str] | None) -> list[Issue]:
    """Duplicate ids and contents over the compact facts; the few documents reported are read
    again for where their id stands."""
    ids = ((path, compact[0]) for path, compact in known if isinstance(compact, tuple))
    digests = ((path, compact[1]) for path, compact in known if isinstance(compact, tuple) and len(compact) == 5)
    found = duplicates(ids, added, "id") + duplicates(digests, added, "content")
    if not found:
        return []
    reported = {path for path, _code, _rule, _message in found}
    where = {item.path: _id_location(item.path, data)
             for item, data in source.read([i for i in source.listed if i.path in reported])}
    return [Issue(path, *where[path], code, rule, message) for path, code, rule, message in found]


def _id_location(path: str, data: bytes) -> tuple[int, int]:
    from ..format.analyze import analyze

    facts = analyze(path, data).facts or {"loc": {}}
    line, col = facts["loc"].get("id", (1, 1))
    return line, col


class CompactTree(TreeFacts):
    """`TreeFacts` over a tree's compact facts and the documents kept whole: what the rules that
    look a name up ask (`graph.lookup_rules`). A document kept whole is answered as itself (the
    rules know their own by identity); of the others, an entity's live observations are one
    stand-in per tenant (they hold no relations: only their tenant is asked). Ids and contents
    are not kept: duplicates are found over the compact columns (`Streamed.judged`)."""

    def __init__(self, known: list[tuple[str, Compact]], kept: dict[str, Analysis]) -> None:
        whole: dict[str, Document] = {}
        cited: set[str] = set()
        for path in sorted(kept):
            facts = kept[path].facts
            if facts is not None and facts["kind"] == "observation":
                whole[path] = facts
            elif facts is not None:
                cited.update(facts["observations"])
        self.retracted = {target for facts in whole.values() for target in facts["retracts"]}
        named = {target for facts in whole.values()
                 for target in (*facts["corrects"], *facts["retracts"], *(facts.get("reclassify") or ()))}
        named.update(facts["feedback"] for facts in whole.values() if facts.get("feedback"))
        named.update(cited)
        self.observations: dict[str, Document] = {}
        self.entities: dict[str, list[Document]] = {}
        stand_ins: dict[tuple[str, Any], Document] = {}
        for path, compact in known:  # in path order: the first of an id is the one looked up
            if not isinstance(compact, tuple) or len(compact) != 5:
                continue
            doc_id, _digest, entity, tenant, _special = compact
            facts = whole.get(path)
            if doc_id in named and doc_id not in self.observations:
                self.observations[doc_id] = facts or _stand_in(doc_id, entity, tenant)
            if not entity or doc_id in self.retracted:
                continue
            if facts is not None:
                self.entities.setdefault(entity, []).append(facts)
            elif (entity, tenant) not in stand_ins:
                stand_ins[entity, tenant] = _stand_in(doc_id, entity, tenant)
                self.entities.setdefault(entity, []).append(stand_ins[entity, tenant])
        self.live = [facts for facts in whole.values() if facts["id"] not in self.retracted]  # who refers
        self.referrers = None

    def holder(self, doc_id: str) -> str | None:
        raise NotImplementedError("ids are judged over the compact columns")

    def recorded(self, digest: str) -> str | None:
        raise NotImplementedError("contents are judged over the compact columns")


def _stand_in(doc_id: str, entity: str | None, tenant: tuple) -> Document:
    return {"kind": "observation", "id": doc_id, "entity": entity, "tenant": dict(tenant), "relations": [],
            "retracts": [], "corrects": [], "timestamp": ""}
