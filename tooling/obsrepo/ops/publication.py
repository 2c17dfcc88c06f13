"""Publication (docs/design.md §16): the rows that bring a repository's published tables from
what is published to the first-parent chain of one commit.

The publishing adapter reads what the catalog holds of this repository (its commits, by seq)
and asks `publication` for the rest; it writes the data tables first and `commits` last. The
decisions live here, in `plan`: which commits are new, whether the request changes nothing
(the same commit twice, or an older one), and whether a rewritten history is refused or
rebased. Sequence numbers continue after the highest published one, so none is ever reused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import InputError
from ..format.reduce import survivor
from .registry import operation
from .session import Session
from .values import Ceiling

DEFAULT_CEILING = "internal"
DATA_TABLES = ("observations", "observation_removals", "observation_fields", "relations", "entity_snapshots")
TABLES = (*DATA_TABLES, "commits")  # the order of the appends: `commits` last


@dataclass(frozen=True)
class Publication:
    """The rows of the published tables for `rev`'s first-parent chain after `published`."""

    # repository → the (seq, sha) it has published, by seq (the catalog's `commits`; other repositories' are ignored)
    published: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    rev: str | None = None
    max_classification: str | None = DEFAULT_CEILING
    rebase_published: bool = False
    repo: str | None = None


@dataclass(frozen=True)
class Plan:
    """`status`: `publish` (append `new`, oldest first, from `first_seq` on, after the state
    of `base`), `current` (the commit is the published head) or `older` (it is published
    below the head). `rebased`: the first abandoned commit, when a rewritten history is
    published anyway."""

    status: str
    new: tuple[str, ...] = ()
    base: str | None = None
    first_seq: int = 1
    rebased: str | None = None


def plan(chain: list[str], published: tuple[tuple[int, str], ...], rebase: bool) -> Plan:
    """What publishing the chain `chain` (oldest first, ending at the requested commit) does."""
    if not published:
        return Plan("publish", tuple(chain))
    head_seq, head = published[-1]
    at = {sha: i for i, sha in enumerate(chain)}
    if head in at:
        new = tuple(chain[at[head] + 1:])
        return Plan("publish", new, head, head_seq + 1) if new else Plan("current")
    if chain[-1] in {sha for _, sha in published}:
        return Plan("older")
    abandoned = next(sha for _, sha in published if sha not in at)
    if not rebase:
        raise InputError(f"the published history of this repository was rewritten: commit {abandoned} is published but "
                         "not on the chain being published; publish into another namespace, or pass `rebase_published` "
                         "to withdraw what the abandoned commits added", rule="published-history-rewritten",
                         commit=abandoned)
    fork = [sha for _, sha in published if sha in at]
    new = tuple(chain[at[fork[-1]] + 1:] if fork else chain)
    return Plan("publish", new, head, head_seq + 1, rebased=abandoned)


@dataclass(frozen=True)
class PublicationRows:
    repo: str
    rev: str
    status: str
    seqs: tuple[int, ...] = ()
    tables: dict[str, Any] = field(default_factory=dict)  # table → Arrow table, in TABLES order
    rebased: str | None = None
    # withheld at the head (expired, or raised above the ceiling): their rows leave every seq
    erased: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"repo": self.repo, "rev": self.rev, "status": self.status, "commits": len(self.seqs),
                "first_seq": self.seqs[0] if self.seqs else None, "last_seq": self.seqs[-1] if self.seqs else None,
                "rows": {name: table.num_rows for name, table in self.tables.items()}, "rebased": self.rebased,
                "erased": list(self.erased)}


@operation("publication", "reads")
def publication(session: Session, request: Publication) -> PublicationRows:
    """Within the session's binding and the ceiling (default `internal`), as `query` and
    `snapshot` answer at each commit."""
    from ..index.history import chain as first_parent_chain

    ceiling = Ceiling.parse(request.max_classification, "max_classification")
    rev = session.rev_or_head(request.rev, "rev")
    chain = first_parent_chain(session.git, rev.sha)

    def rows(scope: Any) -> PublicationRows:
        from ..read import publication as read

        repo = request.repo or repository_name(read.repository_id(scope, chain[0].sha), chain[0].sha)
        decided = plan([c.sha for c in chain], tuple(request.published.get(repo, ())), request.rebase_published)
        if decided.status != "publish":
            return PublicationRows(repo, rev.sha, decided.status)
        return _rows(scope, repo, rev.sha, decided, [c for c in chain if c.sha in set(decided.new)], chain)

    # HEAD's chain is the one the index holds once brought to HEAD: no commit to patch in, no word to
    # stem; an explicit rev, or a rebased published head (off that chain), may be patched in
    return session.read(rows, rev, ceiling=ceiling, stems=request.rev is not None or request.rebase_published)


def repository_name(origin: str, root: str) -> str:
    """What `repo` is published as: the origin URL (its credentials already dropped) when it
    names a host, else the root commit. A local path (`/srv/git/obs.git`, `../obs`, `~/obs`,
    `file://…`, `C:\\obs`) names no repository another machine shares, and would publish this
    machine's folders; the root commit is the same in every clone."""
    if _LOCAL_ORIGIN.match(origin) or ":" not in origin.split("/", 1)[0]:  # git: a slash before any colon is a path
        return root
    return origin


# a local path or a file:// URL; a host is `scheme://host…` or git's `[user@]host:path`
_LOCAL_ORIGIN = re.compile(r"^(?:file:|[~./\\]|[a-zA-Z]:[\\/])")


def _rows(scope: Any, repo: str, rev: str, decided: Plan, new: list[Any], chain: list[Any]) -> PublicationRows:
    """Each new commit's state is compared with the one before; the rows are gathered for all
    of them and each table's are read once at the end, not once per commit, and the snapshots
    the commits changed are reduced together (`Snapshots`)."""
    from ..read import publication as read

    if decided.base is None:
        before = read.State()
    else:
        scope.move_to(decided.base)
        before = read.state(scope, read.changing(scope, [decided.base, *(c.sha for c in new)]))
    base = before
    parents = {c.sha: (chain[i - 1].sha if i else None) for i, c in enumerate(chain)}
    indexed = {sha for (sha,) in scope.rows("SELECT sha FROM commits")}
    published_at = datetime.now(timezone.utc).replace(tzinfo=None)
    seqs, withheld = [], set[str]()
    stored_rows: dict[int, list[int]] = {}  # seq → row ids of what appears, read from the index at the end
    raised_parts: list[dict[str, Any]] = []  # what appears where a classification is raised, read at its commit
    gone_rows: list[tuple[int, str, str]] = []
    commit_rows: list[Any] = []
    snapshots = Snapshots(scope)
    for offset, commit in enumerate(new):
        seq = decided.first_seq + offset
        scope.move_to(commit.sha)
        after, change = read.step(scope, before)
        reason_gone = read.REBASED if decided.rebased and offset == 0 else read.WITHHELD
        gone = {i: read.RETRACTED if i in after.retracted else reason_gone for i in change.left}
        withheld.update(i for i, reason in gone.items() if reason == read.WITHHELD)
        snapshots.ask(seq, after, read.touched(before, after, change), stored=commit.sha in indexed)
        if scope.raised is None and commit.sha in indexed:
            stored_rows[seq] = [row_id for row_ids in change.appeared.values() for row_id in row_ids]
        else:
            raised_parts.append(read.visible_additions(scope, repo, seq, set(change.appeared)))
        gone_rows.extend((seq, i, reason) for i, reason in gone.items())
        commit_rows.append(_commit_row(repo, seq, commit, parents[commit.sha], published_at))
        seqs.append(seq)
        before = after
    if decided.base is not None:  # what the published head held of the entities the new commits reduce
        scope.move_to(decided.base)
        snapshots.ask(decided.first_seq - 1, base, snapshots.every_asked(), stored=decided.base in indexed)
    erased = withheld - read.listed_among(scope, withheld)  # the last commit's state is the one kept
    parts: dict[str, list[Any]] = {name: [] for name in TABLES}
    for added in (read.additions(scope, repo, stored_rows), *raised_parts):
        for name, table in added.items():
            parts[name].append(table)
    parts["observation_removals"].append(read.removals(repo, gone_rows))
    parts["entity_snapshots"].append(read.snapshots(repo, snapshots.changed(seqs, decided.first_seq - 1)))
    parts["commits"] = commit_rows
    tables = {name: _without(name, _concat(name, tables), erased) for name, tables in parts.items()}
    return PublicationRows(repo, rev, "publish", tuple(seqs), tables, decided.rebased, tuple(sorted(erased)))


class Snapshots:
    """The entities' snapshots at each published seq, reduced together rather than commit by
    commit: each commit names the entities it touches (every one when the entity schemas
    changed) and their families' rows as `visible` holds them there go to one table, keyed by
    the entity's survivor and the seq (`entity` + U+001F + seq, so one reduction keeps every
    seq's apart); all of them are reduced in one statement per set of entity schemas, a
    few million rows at a time. A snapshot no commit touches stays as it was, so comparing
    each seq's reductions with the latest before them gives the rows of `entity_snapshots`."""

    BATCH = 500_000  # candidate rows reduced in one statement: ~0.3 GB of DuckDB memory at its peak

    def __init__(self, scope: Any) -> None:
        self.scope = scope
        self.asked: dict[int, set[str] | None] = {}  # seq → the entities it reduces (None: every one)
        self.merges: dict[int, dict[str, str]] = {}
        self.schemas: dict[int, str] = {}  # seq → the commit whose entity schemas (policies) apply
        self.known: dict[int, dict[str, Any]] = {}  # seq → entity → its snapshot (read.Snapshot, or ABSENT)
        self.pending = 0
        scope.con.execute("CREATE OR REPLACE TEMP TABLE publication_candidates (seq INTEGER, eid VARCHAR, row_id BIGINT)")

    def ask(self, seq: int, st: Any, entities: set[str] | None, *, stored: bool) -> None:
        """The snapshots of `entities` at the scope's commit, whose state is `st`: their rows
        now, reduced later; reduced now where `visible` is not the index's stored rows."""
        from ..read import publication as read

        self.asked[seq], self.merges[seq] = entities, st.merges
        if not stored:
            self.known[seq] = read.snapshots_of(self.scope, st, entities)
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
            [seq, str(seq), merged, [survivor(e, st.merges) for e in merged], *params, sorted(st.retracted)])
        self.schemas[seq] = self.scope.at_commit
        self.pending += count
        if self.pending >= self.BATCH:
            self._reduce()

    def every_asked(self) -> set[str] | None:
        asked = list(self.asked.values())
        return None if None in asked else set().union(*asked)  # type: ignore[arg-type]

    def changed(self, seqs: list[int], base: int) -> list[tuple[int, str, Any]]:
        """(seq, entity, snapshot from that seq on) wherever an entity's snapshot changes."""
        from ..read import publication as read

        self._reduce()
        current = dict(self.known.get(base, {}))  # the published head's (a first publication: none)
        rows = []
        for seq in seqs:
            got, asked = self.known[seq], self.asked[seq]
            entities = asked if asked is not None else got.keys() | {e for e, s in current.items() if s is not read.ABSENT}
            for entity in entities:
                old, new = current.get(entity, read.ABSENT), got.get(entity, read.ABSENT)
                if old != new:
                    rows.append((seq, entity, ("{}", "{}", True, None) if new is read.ABSENT else new))
                current[entity] = new
        return rows

    def _reduce(self) -> None:
        """Reduce every candidate row gathered so far, one statement per set of entity schemas."""
        from ..index.reducer_rows import CANDIDATES, all_policies
        from ..index.sqlreduce import reduce_all
        from ..read import publication as read

        waiting = sorted(seq for seq in self.schemas if seq not in self.known)
        by_policies: dict[tuple, list[int]] = {}
        for seq in waiting:
            by_policies.setdefault(tuple(sorted(all_policies(self.scope.git, self.schemas[seq]).items())), []).append(seq)
        relation = ("(SELECT c.eid AS entity, o.id, o.priority, o.specificity, o.timestamp, o.fields, o.valid_from, o.valid_until FROM "
                    "publication_candidates AS c JOIN obs_versions AS o USING (row_id) WHERE c.seq IN (SELECT unnest(?::INTEGER[])))")
        reduced: dict[int, dict[str, Any]] = {seq: {} for seq in waiting}
        for policies, group in by_policies.items():
            for eid, snap in reduce_all(self.scope.con, CANDIDATES.format(relation=relation, where="TRUE"), [group], [],
                                        dict(policies)).items():
                entity, at = eid.rsplit("\x1f", 1)
                reduced[int(at)][entity] = (_canonical(snap["snapshot"]), _canonical(snap["provenance"]),
                                            bool(snap["deleted"]), None)
        for seq in waiting:
            merges, asked, out = self.merges[seq], self.asked[seq], reduced[seq]
            if asked is not None:
                out = {e: snap for e, snap in out.items() if e in asked}
            for entity in merges if asked is None else asked & merges.keys():
                out[entity] = ("{}", "{}", False, survivor(entity, merges))
            if asked is not None:
                out.update({entity: read.ABSENT for entity in asked - out.keys()})
            self.known[seq] = out
        self.scope.con.execute("DELETE FROM publication_candidates")
        self.pending = 0


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _commit_row(repo: str, seq: int, commit: Any, parent: str | None, published_at: datetime) -> Any:
    import pyarrow as pa

    committed_at = commit.committed_at.astimezone(timezone.utc).replace(tzinfo=None)
    return pa.Table.from_pylist(
        [{"repo": repo, "seq": seq, "sha": commit.sha, "parent": parent, "committed_at": committed_at,
          "author": commit.author, "published_at": published_at}],
        schema=pa.schema([("repo", pa.string()), ("seq", pa.int32()), ("sha", pa.string()), ("parent", pa.string()),
                          ("committed_at", pa.timestamp("us")), ("author", pa.string()),
                          ("published_at", pa.timestamp("us"))]))


def cites(provenance: str, ids: set[str] | tuple[str, ...]) -> bool:
    """Whether a published provenance (JSON text) names one of `ids`: its snapshot holds what
    they said."""
    return any(f'"{i}"' in provenance for i in ids)


def _without(name: str, table: Any, erased: set[str]) -> Any:
    """`table` without the rows of the erased observations, and without the snapshots they
    decided: what leaves at the head leaves the rows this publish appends too."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not erased or name in ("commits", "observation_removals") or not table.num_rows:
        return table
    if name == "entity_snapshots":
        keep = [not cites(text, erased) for text in table.column("provenance").to_pylist()]
        return table.filter(pa.array(keep, pa.bool_()))
    column = "observation_id" if name == "relations" else "id"
    return table.filter(pc.invert(pc.is_in(table.column(column), pa.array(sorted(erased), pa.string()))))


# the order of a table's rows, when they were read in more than one part
ORDER = {"observations": ("added_seq", "id"), "observation_fields": ("added_seq", "id", "field"),
         "relations": ("added_seq", "observation_id", "type", "target_entity_id")}


def _concat(name: str, tables: list[Any]) -> Any:
    import pyarrow as pa

    if len(tables) == 1:
        return tables[0]
    table = pa.concat_tables(tables)
    return table.sort_by([(column, "ascending") for column in ORDER[name]]) if name in ORDER else table
