"""The rows publication appends (docs/design.md §16), read from the index commit by commit:
what each new commit of the first-parent chain adds and removes, the snapshots it changes, the
derived tables at the last one, and the `commits` rows. `ops/publication.py` decides which
commits are new (its `plan`) and asks `gather` for their rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scope import ReadScope

DATA_TABLES = ("observations", "observation_removals", "observation_fields", "relations", "entity_snapshots",
               "identity_candidates", "contested_fields")
TABLES = (*DATA_TABLES, "commits")  # the order of the appends: `commits` last
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
class Gathered:
    """The seqs written (none: nothing the binding sees changed), each table's rows (Arrow, in
    TABLES order), the observations erased at the head and those the ceiling holds back."""

    seqs: tuple[int, ...] = ()
    tables: dict[str, Any] = field(default_factory=dict)
    erased: tuple[str, ...] = ()
    held_back: int = 0


def gather(scope: ReadScope, repo: str, base_commit: str | None, first_seq: int, rebased: bool, new: list[Any],
           chain: list[Any], bound: bool) -> Gathered:
    """Each new commit's state is compared with the one before; the rows are gathered for all
    of them and each table's are read once at the end, not once per commit, and the snapshots
    the commits changed are reduced together (`Snapshots`). Each commit is read under a key
    (the seq it has if every commit is written); the keys become seqs once it is known which
    commits are written: every one, or, under a binding, those that add or remove an
    observation the binding sees (§8b), what the others changed falling to the next one."""
    from . import publication as read
    from . import publication_derived as derived
    from .publication_snapshots import Snapshots

    if base_commit is None:
        before = read.State()
    else:
        scope.move_to(base_commit)
        before = read.state(scope, read.changing(scope, [base_commit, *(c.sha for c in new)]))
    base = before
    indexed = {sha for (sha,) in scope.rows("SELECT sha FROM commits")}
    withheld = set[str]()
    read_commits: list[tuple[int, Any, set[str]]] = []  # (key, commit, the ids it adds or removes)
    stored_rows: dict[int, list[int]] = {}  # key → row ids of what appears, read from the index at the end
    raised_parts: list[dict[str, Any]] = []  # what appears where a classification is raised, read at its commit
    gone_rows: list[tuple[int, str, str]] = []
    snapshots = Snapshots(scope)
    for offset, commit in enumerate(new):
        key = first_seq + offset
        scope.move_to(commit.sha)
        after, change = read.step(scope, before)
        reason_gone = read.REBASED if rebased and offset == 0 else read.WITHHELD
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
    if base_commit is not None:  # what the published head held of the entities the new commits reduce
        scope.move_to(base_commit)
        snapshots.ask(first_seq - 1, base, snapshots.every_asked(), stored=base_commit in indexed)
        held = derived.derived(scope)
    erased = withheld - read.listed_among(scope, withheld)  # the last commit's state is the one kept
    written = [(key, commit) for key, commit, ids in read_commits if not bound or ids - erased]
    if not written:  # under a binding, nothing it sees changed: the published head stays where it is
        return Gathered((), {}, (), held_back)
    seqs = {key: first_seq + n for n, (key, _) in enumerate(written)}
    renumber = _renumbering([key for key, _, _ in read_commits], seqs)
    parts: dict[str, list[Any]] = {name: [] for name in TABLES}
    landing = {key: seq for key, seq in renumber.items() if seq is not None}
    stored = {landing[key]: rows for key, rows in stored_rows.items() if key in landing}
    for added in (read.additions(scope, repo, stored), *raised_parts):
        for name, table in added.items():
            parts[name].append(_renumbered(table, SEQ_COLUMN[name], renumber))
    parts["observation_removals"].append(read.removals(repo, [(landing[key], i, reason) for key, i, reason in gone_rows
                                                              if key in landing]))
    changed = snapshots.changed(list(renumber), first_seq - 1, seqs, lambda snap: bool(erased) and cites(snap[1], erased))
    parts["entity_snapshots"].append(read.snapshots(repo, changed))
    for name, table in derived.changed(repo, max(seqs.values()), held, now).items():  # derived at the last commit
        parts[name].append(table)
    parts["commits"] = _commit_rows(repo, written, seqs, chain, bound, base_commit)
    tables = {name: _without(name, _concat(name, tables), erased) for name, tables in parts.items()}
    return Gathered(tuple(seqs.values()), tables, tuple(sorted(erased)), held_back)


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
