"""One judge: a document added to a repository state, held to the rules that look other
documents up (docs/design.md §2, §8): its id is new, its content is new in its tenant, and what
it corrects, retracts, gives feedback on or reclassifies exists in its tenant.

The state is asked through `Facts`, whatever keeps it: the write path's kept state of the
proposal branch or the work tree (`near.NearState`, asking `TreeFacts` of the documents a draft
names), the index at the watcher's commit with the other drafts
(`index/drafts.py`), the index's documents a reviewed change names (`read/diff_check.py`), the
tree's documents (`TreeFacts`: `check`, `check_document`). Each answers the same questions, so
the rules are written once (these, and the graph's in `gate/graph.py`); a state says in its own words where a clash is (a writer learns
which path holds the id, a watcher that the committed document stays).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from .. import errors
from ..format.report import Issue

Document = dict[str, Any]  # a document's facts, as `analyze` gives them


def visible(tenant: dict[str, str], binding: dict[str, str]) -> bool:
    """An observation is visible to a binding iff it has every bound key with an equal value."""
    return all(tenant.get(key) == value for key, value in binding.items())


def loc(facts: Document, key: str, index: int | None = None) -> tuple[int, int]:
    """Where `key` (or its `index`-th item) stands in the document."""
    if index is not None:
        items = facts["loc"].get(f"{key}_items") or []
        if index < len(items):
            line, col = items[index]
            return line, col
    line, col = facts["loc"].get(key, (1, 1))
    return line, col


def reference_targets(path: str, facts: Document, find: Callable[[str], Document | None]) -> list[Issue]:
    """`corrects` and `retracts` name observations of the author's own tenant, never itself.
    `find` looks an id up (the full rules and the watcher's drafts share this)."""
    issues = []
    for key in ("corrects", "retracts"):
        for index, target in enumerate(facts[key]):
            line, col = loc(facts, key, index)
            hit = find(target)
            if target == facts["id"]:
                issues.append(Issue(path, line, col, errors.VALIDATION_ERROR, "self-reference",
                                    f"an observation cannot {key[:-1]} itself"))
            elif hit is None or hit["tenant"] != facts["tenant"]:
                issues.append(Issue(path, line, col, errors.REF_NOT_FOUND, f"{key}-target",
                                    f"`{key}` names '{target}', which does not exist in this tenant"))
    return issues


def stewardship_targets(path: str, facts: Document, find: Callable[[str], Document | None]) -> list[Issue]:
    """`feedback.target` must be an observation visible to the author's tenant; `reclassify`
    targets observations of the same tenant (as `retracts` does). `find` looks an id up among
    the repository's observations (the full rules, the write path's kept state and the
    watcher's drafts share this)."""
    issues = []
    target = facts.get("feedback")
    if target is not None:
        hit = find(target)
        line, col = facts["loc"].get("feedback", (1, 1))
        if target == facts["id"]:
            issues.append(Issue(path, line, col, errors.VALIDATION_ERROR, "self-reference",
                                "an observation cannot give feedback on itself"))
        elif hit is None or not visible(hit["tenant"], facts["tenant"]):
            issues.append(Issue(path, line, col, errors.REF_NOT_FOUND, "feedback-target",
                                f"`feedback.target` names '{target}', which does not exist in this tenant"))
    for index, target in enumerate(facts.get("reclassify") or ()):
        line, col = loc(facts, "reclassify", index)
        hit = find(target)
        if target == facts["id"]:
            issues.append(Issue(path, line, col, errors.VALIDATION_ERROR, "self-reference",
                                "an observation cannot reclassify itself"))
        elif hit is None or hit["tenant"] != facts["tenant"]:
            issues.append(Issue(path, line, col, errors.REF_NOT_FOUND, "reclassify-target",
                                f"`reclassify` names '{target}', which does not exist in this tenant"))
    return issues


class Facts(Protocol):
    """What the judge asks of a repository state about the documents it holds: ids, content
    hashes and targets (the lookup rules), and the live observations of an entity and those
    that relate to it, with their tenants (the graph rules of `gate/graph.py`)."""

    # the refusals' words: `{id}` and `{path}` (the holder) are filled in
    id_taken: str
    content_taken: str

    def holder(self, doc_id: str) -> str | None:
        """The path of the document the rules count that holds `doc_id` (None: the id is new)."""

    def recorded(self, digest: str) -> str | None:
        """The path of an observation with this content hash (the hash covers the tenant)."""

    def observation(self, obs_id: str) -> Document | None:
        """The observation `obs_id` (its `tenant` and `kind` at least, retracted or not), or None."""

    def withdrawn(self, obs_id: str) -> bool:
        """Whether an observation of the state retracts `obs_id`."""

    def about(self, entity: str) -> Iterable[Document]:
        """The live (not withdrawn) observations whose entity is `entity`: their id, timestamp,
        tenant and relations (a relation target exists; the graph's edges leave from here)."""

    def referring(self, entity: str) -> Iterable[Document]:
        """The live observations with a relation to `entity` (what a retraction may orphan)."""


def judge(path: str, facts: Document, known: Facts) -> list[Issue]:
    """What the lookup rules say of the valid document `facts` at `path` added to `known`."""
    issues: list[Issue] = []
    doc_id = facts["id"]
    holder = known.holder(doc_id)
    if holder is not None:
        line, col = loc(facts, "id")
        issues.append(Issue(path, line, col, errors.DUPLICATE_ID, "duplicate-id",
                            known.id_taken.format(id=doc_id, path=holder)))
    if facts["kind"] != "observation":
        return issues
    recorded = known.recorded(facts["hash"])
    if recorded is not None:
        line, col = loc(facts, "id")
        issues.append(Issue(path, line, col, errors.DUPLICATE_CONTENT, "duplicate-content",
                            known.content_taken.format(id=doc_id, path=recorded)))
    return issues + reference_targets(path, facts, known.observation) + stewardship_targets(path, facts, known.observation)


class TreeFacts:
    """The valid documents of a tree (or any set of them), by id, content hash and entity."""

    id_taken = "id '{id}' is already used by {path}"
    content_taken = "the same content (in the same tenant) is already recorded in {path}"

    def __init__(self, documents: Iterable[tuple[str, Document]]) -> None:
        self.ids: dict[str, str] = {}
        self.hashes: dict[str, str] = {}
        self.observations: dict[str, Document] = {}
        self.retracted: set[str] = set()
        self.entities: dict[str, list[Document]] = {}
        self.referrers: dict[str, list[Document]] | None = None  # made when first asked (a retraction's)
        documents = list(documents)
        for path, facts in documents:
            self.ids.setdefault(facts["id"], path)
            if facts["kind"] == "observation":
                self.hashes.setdefault(facts["hash"], path)
                self.observations.setdefault(facts["id"], facts)
                if facts["retracts"]:
                    self.retracted.update(facts["retracts"])
        self.live = [facts for _path, facts in documents
                     if facts["kind"] == "observation" and facts["id"] not in self.retracted]
        for facts in self.live:
            if facts["entity"]:
                self.entities.setdefault(facts["entity"], []).append(facts)

    def holder(self, doc_id: str) -> str | None:
        return self.ids.get(doc_id)

    def recorded(self, digest: str) -> str | None:
        return self.hashes.get(digest)

    def observation(self, obs_id: str) -> Document | None:
        return self.observations.get(obs_id)

    def withdrawn(self, obs_id: str) -> bool:
        return obs_id in self.retracted

    def about(self, entity: str) -> Iterable[Document]:
        return self.entities.get(entity, ())

    def referring(self, entity: str) -> Iterable[Document]:
        if self.referrers is None:
            self.referrers = {}
            for facts in self.live:
                for target in dict.fromkeys(target for _type, target in facts["relations"]):
                    self.referrers.setdefault(target, []).append(facts)
        return self.referrers.get(entity, ())


class Layered:
    """`first`'s answers, else `then`'s: the documents of a change over the state it is added to
    (a retraction in either withdraws the other's observations)."""

    def __init__(self, first: Facts, then: Facts) -> None:
        self.first, self.then = first, then
        self.id_taken, self.content_taken = first.id_taken, first.content_taken

    def holder(self, doc_id: str) -> str | None:
        return self.first.holder(doc_id) or self.then.holder(doc_id)

    def recorded(self, digest: str) -> str | None:
        return self.first.recorded(digest) or self.then.recorded(digest)

    def observation(self, obs_id: str) -> Document | None:
        return self.first.observation(obs_id) or self.then.observation(obs_id)

    def withdrawn(self, obs_id: str) -> bool:
        return self.first.withdrawn(obs_id) or self.then.withdrawn(obs_id)

    def about(self, entity: str) -> Iterable[Document]:
        return self._both(self.first.about(entity), self.then.about(entity))

    def referring(self, entity: str) -> Iterable[Document]:
        return self._both(self.first.referring(entity), self.then.referring(entity))

    def _both(self, firsts: Iterable[Document], thens: Iterable[Document]) -> list[Document]:
        return ([f for f in firsts if not self.then.withdrawn(f["id"])]
                + [f for f in thens if not self.first.withdrawn(f["id"])])
