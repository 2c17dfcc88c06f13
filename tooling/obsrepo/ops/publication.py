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
from typing import Any

from ..errors import InputError
from ..read.publication_rows import CITING, DATA_TABLES, OBSERVATION_COLUMN, SEQ_COLUMN, TABLES, Gathered, cites
from .registry import operation
from .session import Session
from .values import Ceiling

DEFAULT_CEILING = "internal"

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
        from ..read.publication_rows import gather

        done = gather(scope, repo, decided.base, decided.first_seq, decided.rebased is not None,
                      [c for c in chain if c.sha in set(decided.new)], chain, bool(session.binding.as_dict()))
        return _answer(repo, rev.sha, decided, done)

    # HEAD's chain is the one the index holds once brought to HEAD: no commit to patch in, no word to
    # stem; an explicit rev, or a rebased published head (off that chain), may be patched in
    return session.read(rows, rev, ceiling=ceiling, stems=request.rev is not None or request.rebase_published)


def _answer(repo: str, rev: str, decided: Plan, done: Gathered) -> PublicationRows:
    if not done.seqs:  # under a binding, nothing it sees changed: the published head stays where it is
        return PublicationRows(repo, rev, "current", held_back=done.held_back)
    return PublicationRows(repo, rev, "publish", done.seqs, done.tables, decided.rebased, done.erased, done.held_back)


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


# the published tables' vocabulary, the publishing adapter's words (it imports only ops/)
__all__ = ["CITING", "DATA_TABLES", "DEFAULT_CEILING", "MIRRORS", "OBSERVATION_COLUMN", "SEQ_COLUMN", "TABLES", "Plan",
           "Publication", "PublicationRows", "cites", "plan", "publication", "repository_name"]
