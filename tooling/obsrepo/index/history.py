"""What git history says about the document folders, in the shape the index needs.

The index follows the first-parent chain of the indexed commit: commit number `seq` is the
position on that chain (the root is 0). Each chain commit's changes are its diff against its
first parent (`git log --first-parent -m`), so a merge brings in a side branch's files at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime

from ..format.vocabulary import ENTITY_SCHEMAS_DIR
from ..gate.sources import DOCUMENT_ROOTS
from ..gitstore import Change, Git, raw_records
from ..times import commit_time


@dataclass(frozen=True)
class Commit:
    sha: str
    committed_at: datetime
    author: str
    author_email: str


def chain(git: Git, sha: str) -> list[Commit]:
    """The first-parent chain from the root to `sha`, oldest first."""
    out = git.run("log", "--first-parent", "--reverse", "-z", "--format=%H%x00%ct%x00%an%x00%ae", sha)
    fields = out.split(b"\0")
    commits = []
    for i in range(0, len(fields) - 3, 4):
        sha_, when, name, email = (f.decode("utf-8", "replace") for f in fields[i : i + 4])
        commits.append(Commit(sha_.strip(), commit_time(int(when)), name, email))
    return commits


def chain_since(git: Git, base: str, sha: str) -> list[Commit] | None:
    """The chain commits after `base` up to `sha`, oldest first, when `base` is on the
    first-parent chain of `sha` (the usual update: reads only the new commits); None otherwise
    (the branch moved backwards, was rewritten, or `base` came in through a merge)."""
    if base == sha:
        return []
    out = git.run("log", "--first-parent", "--reverse", "-z", "--format=%H%x00%P%x00%ct%x00%an%x00%ae", f"{base}..{sha}",
                  check=False)  # base may be gone (rewritten history, then gc)
    fields = out.split(b"\0")
    commits: list[Commit] = []
    for i in range(0, len(fields) - 4, 5):
        sha_, parents, when, name, email = (f.decode("utf-8", "replace") for f in fields[i : i + 5])
        if not commits and parents.split()[:1] != [base]:
            return None
        commits.append(Commit(sha_.strip(), commit_time(int(when)), name, email))
    return commits or None


SCHEMAS = ENTITY_SCHEMAS_DIR.rstrip("/")


def mainline_changes(git: Git, since: str | None, sha: str) -> Mapping[str, list[Change]]:
    """Changes under the document folders (and the entity schemas) of each chain commit after
    `since` up to `sha`, each commit's read when asked for (`CommitChanges`)."""
    spec = f"{since}..{sha}" if since else sha
    out = git.run(
        "log", "--first-parent", "-m", "--raw", "--no-renames", "--no-ext-diff", "--abbrev=40", "-z",
        "--format=%x01%H", spec, "--", *DOCUMENT_ROOTS, SCHEMAS,
    )
    return CommitChanges(out)


class CommitChanges(Mapping[str, list[Change]]):
    """Commit → its changes, kept as git wrote them and parsed only when asked for: a full build's
    plan walks a million changes commit by commit, and a million `Change` tuples held at once
    cost half a gigabyte; this way one commit's are alive at a time."""

    def __init__(self, out: bytes) -> None:
        self._blocks: dict[str, list[bytes]] = {}
        for commit, block in _blocks(out):
            self._blocks.setdefault(commit, []).append(block)

    def __getitem__(self, commit: str) -> list[Change]:
        return [change for block in self._blocks[commit] for change in _changes_of(block)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._blocks)

    def __len__(self) -> int:
        return len(self._blocks)


def authored(git: Git, since: str | None, sha: str) -> dict[tuple[str, str], str]:
    """(path, blob) → the commit that really wrote it, through side branches (oldest wins)."""
    spec = [f"{since}..{sha}"] if since else [sha]
    out = git.run(
        "log", "--raw", "--no-renames", "--no-ext-diff", "--abbrev=40", "-z", "--diff-filter=AMT",
        "--format=%x01%H", *spec, "--", *DOCUMENT_ROOTS,
    )
    found: dict[tuple[str, str], str] = {}
    for commit, changes in _parse_log(out).items():  # newest first: later entries are older
        for change in changes:
            found[(change.path, change.new_sha)] = commit
    return found


def has_merges(git: Git, since: str | None, sha: str) -> bool:
    spec = f"{since}..{sha}" if since else sha
    return bool(git.run("rev-list", "--merges", "-n", "1", spec).strip())


def commit_info(git: Git, shas: list[str]) -> dict[str, Commit]:
    """Committer time and author of each commit (fields split by US, records by RS)."""
    if not shas:
        return {}
    out = git.run("show", "-s", "--no-walk", "--format=%H%x1f%ct%x1f%an%x1f%ae%x1e", *sorted(set(shas)))
    info = {}
    for record in out.split(b"\x1e"):
        parts = record.strip(b"\n").split(b"\x1f")
        if len(parts) != 4:
            continue
        sha_, when, name, email = (p.decode("utf-8", "replace") for p in parts)
        info[sha_] = Commit(sha_, commit_time(int(when)), name, email)
    return info


def _blocks(out: bytes) -> Iterator[tuple[str, bytes]]:
    """(commit, its block) of `git log --raw -z --format=%x01%H`."""
    for block in out.split(b"\x01")[1:]:
        yield block.split(b"\0", 1)[0].strip().split(b"\n")[0].decode(), block


def _changes_of(block: bytes) -> list[Change]:
    parts = block.split(b"\0")
    head = parts[0].strip().split(b"\n")
    first_meta = head[1] if len(head) > 1 else b""
    items = ([first_meta] if first_meta else []) + parts[1:]
    return [record for record in raw_records(items) if isinstance(record, Change)]


def _parse_log(out: bytes) -> dict[str, list[Change]]:
    result: dict[str, list[Change]] = {}
    for commit, block in _blocks(out):
        result.setdefault(commit, []).extend(_changes_of(block))
    return result
