"""The entities' snapshots of publication (docs/design.md §16): reduced together for every
commit a publish reads, and compared seq after seq to give the rows of `entity_snapshots`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..format.reduce import survivor
from . import publication as read
from .scope import ReadScope


class Snapshots:
    """The entities' snapshots at each commit a publish reads (its `key`), reduced together
    rather than commit by commit: each commit names the entities it touches (every one when the
    entity schemas changed) and their families' rows as `visible` holds them there go to one
    table, keyed by the entity's survivor and the key (`entity` + U+001F + key, so one reduction
    keeps every key's apart); all of them are reduced in one statement per set of entity
    schemas, a few million rows at a time. A snapshot no commit touches stays as it was, so
    comparing each commit's reductions with the latest before them gives the rows of
    `entity_snapshots`."""

    BATCH = 500_000  # candidate rows reduced in one statement: ~0.3 GB of DuckDB memory at its peak

    def __init__(self, scope: ReadScope) -> None:
        self.scope = scope
        self.asked: dict[int, set[str] | None] = {}  # key → the entities it reduces (None: every one)
        self.merges: dict[int, dict[str, str]] = {}
        self.schemas: dict[int, str] = {}  # key → the commit whose entity schemas (policies) apply
        self.known: dict[int, dict[str, Any]] = {}  # key → entity → its snapshot (read.Snapshot, or ABSENT)
        self.pending = 0
        scope.con.execute("CREATE OR REPLACE TEMP TABLE publication_candidates (seq INTEGER, eid VARCHAR, row_id BIGINT)")

    def ask(self, key: int, st: read.State, entities: set[str] | None, *, stored: bool) -> None:
        """The snapshots of `entities` at the scope's commit, whose state is `st`: their rows
        now, reduced later; reduced now where `visible` is not the index's stored rows."""
        self.asked[key], self.merges[key] = entities, st.merges
        if not stored:
            self.known[key] = read.snapshots_of(self.scope, st, entities)
            return
        if entities is None:
            where, params = "TRUE", []
        else:
            survivors = {survivor(e, st.merges) for e in entities}
            family = survivors | {e for e in st.merges if survivor(e, st.merges) in survivors} | entities
            where, params = "v.entity IN (SELECT unnest(?::VARCHAR[]))", [sorted(family)]
        merged = sorted(st.merges)
        (count,) = self.scope.one(
            "INSERT INTO publication_candidates SELECT ?::INTEGER, coalesce(m.survivor, v.entity) || chr(31) || ?, v.row_id "
            "FROM visible AS v LEFT JOIN (SELECT unnest(?::VARCHAR[]) AS entity, unnest(?::VARCHAR[]) AS survivor) AS m "
            f"ON m.entity = v.entity WHERE v.entity IS NOT NULL AND {where} AND v.id NOT IN (SELECT unnest(?::VARCHAR[]))",
            [key, str(key), merged, [survivor(e, st.merges) for e in merged], *params, sorted(st.retracted)])
        self.schemas[key] = self.scope.at_commit or ""
        self.pending += count
        if self.pending >= self.BATCH:
            self._reduce()

    def every_asked(self) -> set[str] | None:
        asked = list(self.asked.values())
        return None if None in asked else set().union(*asked)  # type: ignore[arg-type]

    def changed(self, keys: list[int], base: int, seqs: Mapping[int, int],
                leaves: Callable[[Any], bool]) -> list[tuple[int, str, Any]]:
        """(seq, entity, snapshot from that seq on) wherever an entity's snapshot differs from
        what the tables hold: compared at each key that becomes a published seq (`seqs`: key →
        seq), with what the keys between changed (commits a bound publish does not write). A
        snapshot that `leaves` the tables (the erased observations decided it) counts as none,
        so no row says that an entity only they spoke of was deleted."""

        def kept(snap: Any) -> Any:
            return read.ABSENT if snap is not read.ABSENT and leaves(snap) else snap

        self._reduce()
        # what the tables hold: the published head's (a first publication: none)
        held = {entity: kept(snap) for entity, snap in self.known.get(base, {}).items()}
        current, touched, rows = dict(held), set[str](), []
        for key in keys:
            got, asked = self.known[key], self.asked[key]
            entities = asked if asked is not None else got.keys() | {e for e, s in current.items() if s is not read.ABSENT}
            current.update((entity, kept(got.get(entity, read.ABSENT))) for entity in entities)
            touched |= entities
            if key not in seqs:
                continue
            for entity in sorted(touched):
                new = current[entity]
                if held.get(entity, read.ABSENT) != new:
                    rows.append((seqs[key], entity, ("{}", "{}", True, None) if new is read.ABSENT else new))
                    held[entity] = new
            touched = set()
        return rows

    def _reduce(self) -> None:
        """Reduce every candidate row gathered so far, one statement per set of entity schemas."""
        from ..index.reducer_rows import CANDIDATES, all_policies
        from ..index.sqlreduce import reduce_all

        waiting = sorted(key for key in self.schemas if key not in self.known)
        by_policies: dict[tuple, list[int]] = {}
        for key in waiting:
            by_policies.setdefault(tuple(sorted(all_policies(self.scope.git, self.schemas[key]).items())), []).append(key)
        relation = ("(SELECT c.eid AS entity, o.id, o.priority, o.specificity, o.timestamp, o.fields, o.valid_from, o.valid_until "
                    "FROM "
                    "publication_candidates AS c JOIN obs_versions AS o USING (row_id) WHERE c.seq IN (SELECT unnest(?::INTEGER[])))")
        reduced: dict[int, dict[str, Any]] = {key: {} for key in waiting}
        for policies, group in by_policies.items():
            for eid, snap in reduce_all(self.scope.con, CANDIDATES.format(relation=relation, where="TRUE"), [group], [],
                                        dict(policies)).items():
                entity, at = eid.rsplit("\x1f", 1)
                reduced[int(at)][entity] = (_canonical(snap["snapshot"]), _canonical(snap["provenance"]),
                                            bool(snap["deleted"]), None)
        for key in waiting:
            merges, asked, out = self.merges[key], self.asked[key], reduced[key]
            if asked is not None:
                out = {e: snap for e, snap in out.items() if e in asked}
            for entity in merges if asked is None else asked & merges.keys():
                out[entity] = ("{}", "{}", False, survivor(entity, merges))
            if asked is not None:
                out.update({entity: read.ABSENT for entity in asked - out.keys()})
            self.known[key] = out
        self.scope.con.execute("DELETE FROM publication_candidates")
        self.pending = 0


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
