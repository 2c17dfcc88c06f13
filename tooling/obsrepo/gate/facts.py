"""The compact facts of every document, keyed by blob id: what the repository rules need of
the documents a change does not touch (docs/design.md §2.7).

`check --base B` reads and judges only the documents `B..HEAD` (and the work tree) touch; the
rest of the tree enters the repository rules through this store, never read from git again.
One small tuple per blob, no dict per document, strings shared where many documents hold the
same (entities, tenants), so a million documents fit in a few hundred megabytes:

- a comprehension: `(id,)` (the rules look it up by id only);
- an observation: `(id, content hash as 32 bytes, entity or None, tenant as sorted pairs,
  special)`; `special` is None for a plain observation, else `(timestamp, corrects, retracts,
  relations, where each relation is written)`: the facts of the few documents the graph
  rules and retractions need whole;
- 0: an invalid document (no facts; the repository rules skip it).

Content-addressed and keyed by the rules' digest, so an entry is never stale. The file lives
in the git common directory (shared by every work tree of the clone) and is written
atomically; a missing, damaged or foreign file is ignored and built again from git.
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from ..errors import WriteFault
from ..files import staged
from ..gitstore import Git
from .cache import load_entries, rules_digest, serialized

FORMAT = "facts 1"
Compact = tuple | int  # see the module's docstring
_KINDS = {"observation": b"o", "comprehension": b"c", "other": b"x"}


def blob_key(kind: str, sha: str) -> bytes:
    """The store's key of a blob read as a document of `kind`: the kind's letter and the raw id."""
    return _KINDS[kind] + bytes.fromhex(sha)


class FactsStore:
    """Compact facts by blob key, loaded whole (one `marshal` read), written back when it learnt
    something."""

    def __init__(self, file: Path | None) -> None:
        self.file = file
        self.digest = f"{rules_digest()}-{FORMAT}" if file is not None else ""
        self._entries: dict[bytes, Compact] | None = None if file is not None else {}  # loaded on first use
        self.new = 0  # entries learnt by this run
        self._shared: dict[Any, Any] = {}

    @classmethod
    def open(cls, git: Git | None) -> FactsStore:
        """The repository's store; an empty one, never written, without git or with OBSREPO_NO_CACHE."""
        if git is None or os.environ.get("OBSREPO_NO_CACHE"):
            return cls(None)
        try:
            common = git.run("rev-parse", "--path-format=absolute", "--git-common-dir").decode().strip()
        except Exception:  # a broken repository is reported elsewhere; the store just stays off
            return cls(None)
        return cls(Path(common) / "obsrepo" / "facts.marshal")

    @property
    def entries(self) -> dict[bytes, Compact]:
        if self._entries is None:
            assert self.file is not None
            self._entries = _whole(load_entries(self.file, self.digest))
        return self._entries

    @property
    def loaded(self) -> bool:
        """Whether the file was read (a pull request's check on a known base never reads it)."""
        return self._entries is not None

    def get(self, key: bytes) -> Compact | None:
        return self.entries.get(key)

    def learn(self, key: bytes, facts: dict[str, Any] | None) -> Compact:
        """Keep the compact form of a document's facts (`analyze`'s, None when invalid); a store
        that is never written (no git, OBSREPO_NO_CACHE) keeps nothing."""
        if self.file is None:
            return self.compact(facts)
        known = self.entries.get(key)
        if known is None:
            known = self.entries[key] = self.compact(facts)
            self.new += 1
        return known

    def compact(self, facts: dict[str, Any] | None) -> Compact:
        if facts is None:
            return 0
        if facts["kind"] == "comprehension":
            return (facts["id"],)
        share = self._shared.setdefault
        tenant = share(("t", *sorted(facts["tenant"].items())), tuple(sorted(facts["tenant"].items())))
        entity = share(facts["entity"], facts["entity"])
        special = None
        if facts["corrects"] or facts["retracts"] or facts["relations"]:
            special = (facts["timestamp"], tuple(facts["corrects"]), tuple(facts["retracts"]),
                       tuple((share(kind, kind), share(target, target)) for kind, target in facts["relations"]),
                       tuple(tuple(at) for at in facts["loc"].get("relations_items") or ()))
        return (facts["id"], bytes.fromhex(facts["hash"]), entity, tenant, special)

    def save(self) -> None:
        """Write the store back when it learnt something (atomically; a read-only git directory
        only costs speed next time)."""
        if self.file is None or not self.new:
            return
        entries = self.entries
        try:
            with staged(str(self.file)) as temporary, open(temporary, "wb") as handle:
                for chunk in serialized(self.digest, [marshal.dumps(entries)]):
                    handle.write(chunk)
        except WriteFault:
            pass


def _whole(entries: dict) -> dict[bytes, Compact]:
    """The entries of a file that reads back as written, {} otherwise (a damaged file is built anew)."""
    for key, value in entries.items():
        if not (key.__class__ is bytes and (value == 0 or (value.__class__ is tuple and len(value) in (1, 5)))):
            return {}
    return entries


def expand(compact: Compact) -> dict[str, Any] | None:
    """A compact entry as the facts the repository rules read (`analyze`'s shape, locations
    only where a rule reports on this document: its relations)."""
    if not compact:
        return None
    assert isinstance(compact, tuple)
    if len(compact) == 1:
        return {"kind": "comprehension", "id": compact[0], "version": 1, "observations": [], "loc": {}}
    doc_id, digest, entity, tenant, special = compact
    timestamp, corrects, retracts, relations, where = special or ("", (), (), (), ())
    return {"kind": "observation", "id": doc_id, "timestamp": timestamp, "tenant": dict(tenant), "entity": entity,
            "corrects": list(corrects), "retracts": list(retracts), "relations": [list(r) for r in relations],
            "hash": digest.hex(), "feedback": None, "reclassify": [],
            "loc": {"relations_items": [list(at) for at in where]}}


def matching(documents: Iterable[tuple[str, Compact]], ids: set[str], hashes: set[str], entities: set[str],
             graph_types: set[str], relation_targets: set[str], paths: AbstractSet[str] = frozenset(),
             ) -> Iterator[tuple[str, dict[str, Any]]]:
    """The documents a change's repository rules must see (see `change.Wanted`): those with one
    of these ids, content hashes or entities, every retraction, every document with a relation
    of one of `graph_types` or to one of `relation_targets`, and those at `paths`."""
    digests = {bytes.fromhex(h) for h in hashes}
    for path, compact in documents:
        if not compact:
            continue
        assert isinstance(compact, tuple)
        if compact[0] in ids or path in paths:
            yield path, expand(compact)  # type: ignore[misc]
            continue
        if len(compact) == 1:
            continue
        _id, digest, entity, _tenant, special = compact
        if digest in digests or entity in entities or (special is not None and (
                special[2] or any(kind in graph_types or target in relation_targets for kind, target in special[3]))):
            yield path, expand(compact)  # type: ignore[misc]
