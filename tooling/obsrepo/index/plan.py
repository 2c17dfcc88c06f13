"""What an index update must do, decided before anything is written.

`plan_update` reads git only (the first-parent chain, the changes of its new commits) and
returns an `UpdatePlan`; `build.apply_plan` carries it out in DuckDB. Tests, the watch loop
and the MCP server call the planner on its own: it never opens the index.

A version of a document is visible at chain positions `added_seq <= s < removed_seq`. A plan
keeps the stored chain up to `keep` (the last position both chains share), forgets what lies
beyond it (`truncate`: the branch moved backwards or was rewritten), and appends the new
commits: the stored versions they remove become `removals`, the versions they add become
`additions` (a version added and removed within the new commits gets its whole range here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from ..format.rules import kind_of
from ..gitstore import Change, Git
from . import history
from .schema import NOW


class Addition(NamedTuple):
    path: str
    blob: str
    added_seq: int
    commit: str  # the commit that added this version (on a merged branch, not the merge)
    removed_seq: int = NOW


@dataclass
class UpdatePlan:
    target: str
    full: bool  # nothing stored is reused
    keep: int = -1  # the last chain position shared with the stored index (-1: none)
    since: str | None = None  # the chain commit at `keep`
    truncate: bool = False  # stored chain commits after `keep` are forgotten
    commits: list[history.Commit] = field(default_factory=list)  # appended, at positions keep+1, keep+2, …
    info: dict[str, history.Commit] = field(default_factory=dict)  # every commit an addition names
    removals: list[tuple[str, int]] = field(default_factory=list)  # (path, seq) of stored versions
    additions: list[Addition] = field(default_factory=list)
    schemas_changed: bool = False  # an entity schema changed on the way

    @property
    def empty(self) -> bool:
        return not self.commits and not self.truncate


def plan_update(git: Git, stored: list[str] | None, target: str) -> UpdatePlan:
    """The plan that brings an index holding chain `stored` (None: no index) to `target`."""
    since: str | None
    forward = history.chain_since(git, stored[-1], target) if stored else None
    if stored and forward is not None:  # the stored chain is a prefix of the new one
        keep, appended, since = len(stored) - 1, forward, stored[-1]
    else:
        new_chain = history.chain(git, target)
        keep = shared_prefix(stored or [], [c.sha for c in new_chain])
        appended = new_chain[keep + 1 :]
        since = new_chain[keep].sha if keep >= 0 else None
    plan = UpdatePlan(target, stored is None, keep=keep, since=since, commits=appended,
                      truncate=stored is not None and keep < len(stored) - 1)
    if not appended:
        return plan
    plan.info = {c.sha: c for c in appended}
    authors: dict[tuple[str, str], str] = {}
    if history.has_merges(git, since, target):
        authors = history.authored(git, since, target)
        plan.info.update(history.commit_info(git, [s for s in authors.values() if s not in plan.info]))
    seq_of = {c.sha: keep + 1 + i for i, c in enumerate(appended)}
    plan.removals, plan.additions, plan.schemas_changed = versions_of(
        history.mainline_changes(git, since, target), seq_of, authors)
    return plan


def versions_of(changes: Mapping[str, list[Change]], seq_of: dict[str, int],
                authors: dict[tuple[str, str], str]) -> tuple[list[tuple[str, int]], list[Addition], bool]:
    """Walk the new commits' changes in chain order: (removals of stored versions, additions,
    whether an entity schema changed). Pure: no git, no DuckDB."""
    removals: list[tuple[str, int]] = []
    additions: list[Addition] = []
    open_version: dict[str, int] = {}
    schemas_changed = False
    for sha in sorted(changes, key=lambda s: seq_of[s]):
        seq = seq_of[sha]
        for change in sorted(changes[sha], key=lambda c: c.path):
            if kind_of(change.path) == "other":  # an entity schema: the snapshots are reduced again
                schemas_changed = True
                continue
            if change.status in ("D", "M", "T"):
                if change.path in open_version:
                    at = open_version.pop(change.path)
                    additions[at] = additions[at]._replace(removed_seq=seq)
                else:
                    removals.append((change.path, seq))
            if change.status in ("A", "M", "T") and change.new_mode in ("100644", "100755"):
                open_version[change.path] = len(additions)
                additions.append(Addition(change.path, change.new_sha, seq, authors.get((change.path, change.new_sha), sha)))
    return removals, additions, schemas_changed


def shared_prefix(stored: list[str], new: list[str]) -> int:
    """The last seq at which both chains agree (chains from one root agree on a prefix)."""
    low, high = 0, min(len(stored), len(new)) - 1
    if high < 0 or stored[0] != new[0]:
        return -1
    while low < high:  # invariant: stored[low] == new[low]
        mid = (low + high + 1) // 2
        if stored[mid] == new[mid]:
            low = mid
        else:
            high = mid - 1
    return low
