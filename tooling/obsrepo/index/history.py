"""What git history says about the document folders, in the shape the index needs.

The index follows the first-parent chain of the indexed commit: commit number `seq` is the
position on that chain (the root is 0). Each chain commit's changes are its diff against its
first parent (`git log --first-parent -m`), so a merge brings in a side branch's files at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..format.vocabulary import ENTITY_SCHEMAS_DIR
from ..gate.sources import DOCUMENT_ROOTS
from ..gitstore import Change, Git, raw_records


@dataclass(frozen=True)
class Commit:
    sha: str
    committed_at: datetime
    author: str
    author_email: str


def chain(git: Git, sha: str) -> list[Commit]:
    """The first-parent chain from the root to `sha`, oldest first."""
    out = git.run("log", "--first-parent", "--reverse", "-z", "--format=%H%x00%cI%x00%an%x00%ae", sha)
    fields = out.split(b"\0")
    commits = []
    for i in range(0, len(fields) - 3, 4):
        sha_, when, name, email = (f.decode("utf-8", "replace") for f in fields[i : i + 4])
        commits.append(Commit(sha_.strip(), datetime.fromisoformat(when), name, email))
    return commits


def chain_since(git: Git, base: str, sha: str) -> list[Commit] | None:
    """The chain commits after `base` up to `sha`, oldest first, when `base` is on the
    first-parent chain of `sha` (the usual update: reads only the new commits); None otherwise
    (the branch moved backwards, was rewritten, or `base` came in through a merge)."""
    if base == sha:
        return []
    out = git.run("log", "--first-parent", "--reverse", "-z", "--format=%H%x00%P%x00%cI%x00%an%x00%ae", f"{base}..{sha}",
                  check=False)  # base may be gone (rewritten history, then gc)
    fields = out.split(b"\0")
    commits: list[Commit] = []
    for i in range(0, len(fields) - 4, 5):
        sha_, parents, when, name, email = (f.decode("utf-8", "replace") for f in fields[i : i + 5])
        if not commits and parents.split()[:1] != [base]:
            return None
        commits.append(Commit(sha_.strip(), datetime.fromisoformat(when), name, email))
    return commits or None


SCHEMAS = ENTITY_SCHEMAS_DIR.rstrip("/")


def mainline_changes(git: Git, since: str | None, sha: str) -> dict[str, list[Change]]:
    """Changes under the document folders (and the entity schemas) of each chain commit after
    `since` up to `sha`."""
    spec = f"{since}..{sha}" if since else sha
    out = git.run(
        "log", "--first-parent", "-m", "--raw", "--no-renames", "--no-ext-diff", "--abbrev=40", "-z",
        "--format=%x01%H", spec, "--", *DOCUMENT_ROOTS, SCHEMAS,
    )
    return _parse_log(out)


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
    out = git.run("show", "-s", "--no-walk", "--format=%H%x1f%cI%x1f%an%x1f%ae%x1e", *sorted(set(shas)))
    info = {}
    for record in out.split(b"\x1e"):
        parts = record.strip(b"\n").split(b"\x1f")
        if len(parts) != 4:
            continue
        sha_, when, name, email = (p.decode("utf-8", "replace") for p in parts)
        info[sha_] = Commit(sha_, datetime.fromisoformat(when), name, email)
    return info


def _parse_log(out: bytes) -> dict[str, list[Change]]:
    result: dict[str, list[Change]] = {}
    for block in out.split(b"\x01")[1:]:
        parts = block.split(b"\0")
        head = parts[0].strip().split(b"\n")
        commit = head[0].decode()
        changes: list[Change] = []
        first_meta = head[1] if len(head) > 1 else b""
        items = ([first_meta] if first_meta else []) + parts[1:]
        changes.extend(record for record in raw_records(items) if isinstance(record, Change))
        result.setdefault(commit, []).extend(changes)
    return result
