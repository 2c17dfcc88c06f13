"""Publication (docs/design.md §16): the rows that bring a repository's published tables from
what is published to the first-parent chain of one commit.

The publishing adapter reads what the catalog holds of this repository (its commits, by seq)
and asks `publication` for the rest; it writes the data tables first and `commits` last. The
decisions live here, in `plan`: which commits are new, whether the request changes nothing
(the same commit twice, or an older one), and whether a rewritten history is refused or
rebased. Sequence numbers continue after the highest published one, so none is ever reused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import InputError
from .registry import operation
from .session import Session
from .values import Ceiling

DEFAULT_CEILING = "internal"
DATA_TABLES = ("observations", "observation_removals", "observation_fields", "relations", "entity_snapshots",
               "identity_candidates", "contested_fields")
TABLES = (*DATA_TABLES, "commits")  # the order of the appends: `commits` last

# One vocabulary: a published table that mirrors a table of the index (docs/reference/tables.md,
# what `obsrepo sql` reads) names what they share as the index does; the columns named here are
# publication's own (which repository, at which seq, what the index has no column for).
MIRRORS = {"observations": ("observations", ("repo", "added_seq")),
           "observation_fields": ("observation_fields", ("repo", "added_seq")),
           "relations": ("relations", ("repo", "added_seq")),
           "entity_snapshots": ("snapshots", ("repo", "from_seq", "merged_into")),
           "identity_candidates": ("identity_candidates", ("repo", "from_seq", "withdrawn")),
           "contested_fields": ("contested_fields", ("repo", "from_seq", "withdrawn")),
           "commits": ("commits", ("repo", "parent", "published_at"))}
# the column of each table that names an observation: `id` where a row is one, as in the index
OBSERVATION_COLUMN = {"observations": "id", "observation_removals": "observation_id",
                      "observation_fields": "observation_id", "relations": "observation_id"}
# the JSON column of a table whose rows cite observations: a row citing an erased one leaves
CITING = {"entity_snapshots": "provenance", "identity_candidates": "evidence"}
# the column that says at which seq a table's row appeared
SEQ_COLUMN = {"observations": "added_seq", "observation_removals": "removed_seq", "observation_fields": "added_seq",
              "relations": "added_seq", "entity_snapshots": "from_seq", "identity_candidates": "from_seq",
              "contested_fields": "from_seq", "commits": "seq"}


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


def plan(chain: list[str], published: tuple[tuple[int, str], ...], rebase: bool, below_head: bool = False) -> Plan:
    """What publishing the chain `chain` (oldest first, ending at the requested commit) does;
    `below_head`: the commit is on the published head's first-parent chain (under a binding,
    a commit it does not see is on the chain but has no row)."""
    if not published:
        return Plan("publish", tuple(chain))
    head_seq, head = published[-1]
    at = {sha: i for i, sha in enumerate(chain)}
    if head in at:
        new = tuple(chain[at[head] + 1:])
        return Plan("publish", new, head, head_seq + 1) if new else Plan("current")
    if below_head or chain[-1] in {sha for _, sha in published}:
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
    held_back: int = 0  # observations of the binding at the commit that the ceiling keeps out

    def to_json(self) -> dict[str, Any]:
        return {"repo": self.repo, "rev": self.rev, "status": self.status, "commits": len(self.seqs),
                "first_seq": self.seqs[0] if self.seqs else None, "last_seq": self.seqs[-1] if self.seqs else None,
                "rows": {name: table.num_rows for name, table in self.tables.items()}, "rebased": self.rebased,
                "erased": list(self.erased), "held_back": self.held_back}


@operation("publication", "reads")
def publication(session: Session, request: Publication) -> PublicationRows:
    """Within the session's binding and the ceiling (default `internal`), as `query` and
    `snapshot` answer at each commit."""
    from ..index.history import chain as first_parent_chain
    from ..index.history import chain_since

    ceiling = Ceiling.parse(request.max_classification, "max_classification")
    rev = session.rev_or_head(request.rev, "rev")
    chain = first_parent_chain(session.git, rev.sha)

    def rows(scope: Any) -> PublicationRows:
        from ..read import publication as read

        repo = request.repo or repository_name(read.repository_id(scope, chain[0].sha), chain[0].sha)
        published = tuple(request.published.get(repo, ()))
        shas = [c.sha for c in chain]
        below = bool(published) and published[-1][1] not in shas and chain_since(session.git, rev.sha, published[-1][1]) is not None
        decided = plan(shas, published, request.rebase_published, below)
        if decided.status != "publish":
            return PublicationRows(repo, rev.sha, decided.status)
        return _rows(scope, repo, rev.sha, decided, [c for c in chain if c.sha in set(decided.new)], chain,
                     bool(session.binding.as_dict()))

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


def _rows(scope: Any, repo: str, rev: str, decided: Plan, new: list[Any], chain: list[Any],
          bound: bool) -> PublicationRows:
    """Each new commit's state is compared with the one before; the rows are gathered for all
    of them and each table's are read once at the end, not once per commit, and the snapshots
    the commits changed are reduced together (`Snapshots`). Each commit is read under a key
    (the seq it has if every commit is written); the keys become seqs once it is known which
    commits are written: every one, or, under a binding, those that add or remove an
    observation the binding sees (§8b), what the others changed falling to the next one."""
    from ..read import publication as read
    from ..read import publication_derived as derived
    from ..read.publication_snapshots import Snapshots

    if decided.base is None:
        before = read.State()
    else:
        scope.move_to(decided.base)
        before = read.state(scope, read.changing(scope, [decided.base, *(c.sha for c in new)]))
    base = before
    indexed = {sha for (sha,) in scope.rows("SELECT sha FROM commits")}
    withheld = set[str]()
    read_commits: list[tuple[int, Any, set[str]]] = []  # (key, commit, the ids it adds or removes)
    stored_rows: dict[int, list[int]] = {}  # key → row ids of what appears, read from the index at the end
    raised_parts: list[dict[str, Any]] = []  # what appears where a classification is raised, read at its commit
    gone_rows: list[tuple[int, str, str]] = []
    snapshots = Snapshots(scope)
    for offset, commit in enumerate(new):
        key = decided.first_seq + offset
        scope.move_to(commit.sha)
        after, change = read.step(scope, before)
        reason_gone = read.REBASED if decided.rebased and offset == 0 else read.WITHHELD
        gone = {i: read.RETRACTED if i in after.retracted else reason_gone for i in change.left}
        withheld.update({i for i, reason in gone.items() if reason == read.WITHHELD} | change.vanished)
        snapshots.ask(key, after, read.touched(before, after, change), stored=commit.sha in indexed)
        if scope.raised is None and commit.sha in indexed:
            stored_rows[key] = [row_id for row_ids in change.appeared.values() for row_id in row_ids]
        else:
            raised_parts.append(read.visible_additions(scope, repo, key, set(change.appeared)))
        gone_rows.extend((key, i, reason) for i, reason in gone.items())
        read_commits.append((key, commit, set(change.appeared) | change.left))
        before = after
    held_back = read.held_back(scope) if new else 0  # at the last commit, before the scope moves
    now = derived.derived(scope)
    held: derived.Derived = {}
    if decided.base is not None:  # what the published head held of the entities the new commits reduce
        scope.move_to(decided.base)
        snapshots.ask(decided.first_seq - 1, base, snapshots.every_asked(), stored=decided.base in indexed)
        held = derived.derived(scope)
    erased = withheld - read.listed_among(scope, withheld)  # the last commit's state is the one kept
    written = [(key, commit) for key, commit, ids in read_commits if not bound or ids - erased]
    if not written:  # under a binding, nothing it sees changed: the published head stays where it is
        return PublicationRows(repo, rev, "current", held_back=held_back)
    seqs = {key: decided.first_seq + n for n, (key, _) in enumerate(written)}
    renumber = _renumbering([key for key, _, _ in read_commits], seqs)
    parts: dict[str, list[Any]] = {name: [] for name in TABLES}
    landing = {key: seq for key, seq in renumber.items() if seq is not None}
    stored = {landing[key]: rows for key, rows in stored_rows.items() if key in landing}
    for added in (read.additions(scope, repo, stored), *raised_parts):
        for name, table in added.items():
            parts[name].append(_renumbered(table, SEQ_COLUMN[name], renumber))
    parts["observation_removals"].append(read.removals(repo, [(landing[key], i, reason) for key, i, reason in gone_rows
                                                              if key in landing]))
    changed = snapshots.changed(list(renumber), decided.first_seq - 1, seqs, lambda snap: bool(erased) and cites(snap[1], erased))
    parts["entity_snapshots"].append(read.snapshots(repo, changed))
    for name, table in derived.changed(repo, max(seqs.values()), held, now).items():  # derived at the last commit
        parts[name].append(table)
    parts["commits"] = _commit_rows(repo, written, seqs, chain, bound, decided.base)
    tables = {name: _without(name, _concat(name, tables), erased) for name, tables in parts.items()}
    return PublicationRows(repo, rev, "publish", tuple(seqs.values()), tables, decided.rebased, tuple(sorted(erased)),
                           held_back)


def _renumbering(keys: list[int], seqs: dict[int, int]) -> dict[int, int | None]:
    """key → the seq its rows go to: its own where its commit is written, else the next
    written commit's (None after the last one: rows only of erased observations, dropped)."""
    out: dict[int, int | None] = {}
    upcoming: int | None = None
    for key in reversed(keys):
        upcoming = seqs.get(key, upcoming)
        out[key] = upcoming
    return dict(reversed(out.items()))


def _renumbered(table: Any, column: str, renumber: dict[int, int | None]) -> Any:
    """`table` with its seq column's keys made seqs (rows of no seq dropped)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if all(key == seq for key, seq in renumber.items()) or not table.num_rows:
        return table
    seqs = pa.array([renumber.get(key) for key in table.column(column).to_pylist()], pa.int32())
    return table.set_column(table.schema.get_field_index(column), column, seqs).filter(pc.is_valid(seqs))


def _commit_rows(repo: str, written: list[tuple[int, Any]], seqs: dict[int, int], chain: list[Any], bound: bool,
                 published_head: str | None) -> list[Any]:
    """The `commits` rows. `parent` is the commit before on the first-parent chain; under a
    binding, the commit written before (the published head, None before a first publication),
    so no row names a commit the binding does not see."""
    published_at = datetime.now(timezone.utc).replace(tzinfo=None)
    parents = {c.sha: (chain[i - 1].sha if i else None) for i, c in enumerate(chain)}
    rows, previous = [], published_head
    for key, commit in written:
        parent = previous if bound else parents[commit.sha]
        rows.append(_commit_row(repo, seqs[key], commit, parent, published_at))
        previous = commit.sha
    return rows


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
    """`table` without the rows of the erased observations (their removals included: §8b, they
    leave no trace), and without the snapshots they decided: what leaves at the head leaves
    the rows this publish appends too."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not erased or name == "commits" or not table.num_rows:
        return table
    if name in CITING:
        keep = [not cites(text, erased) for text in table.column(CITING[name]).to_pylist()]
        return table.filter(pa.array(keep, pa.bool_()))
    if name == "contested_fields":
        ids = pa.array(sorted(erased), pa.string())
        return table.filter(pc.invert(pc.or_(pc.is_in(table.column("winner_observation_id"), ids),
                                             pc.is_in(table.column("challenger_observation_id"), ids))))
    column = table.column(OBSERVATION_COLUMN[name])
    return table.filter(pc.invert(pc.is_in(column, pa.array(sorted(erased), pa.string()))))


# the order of a table's rows, when they were read in more than one part
ORDER = {"observations": ("added_seq", "id"), "observation_fields": ("added_seq", "observation_id", "field"),
         "relations": ("added_seq", "observation_id", "type", "target_entity")}


def _concat(name: str, tables: list[Any]) -> Any:
    import pyarrow as pa

    if len(tables) == 1:
        return tables[0]
    table = pa.concat_tables(tables)
    return table.sort_by([(column, "ascending") for column in ORDER[name]]) if name in ORDER else table
