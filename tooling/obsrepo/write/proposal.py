"""The write path (docs/design.md §11): one new, checked file in one new commit on a proposal branch.

The commit is made from git objects (a blob, the trees along its path, a commit) and published
with a compare-and-swap ref update, so the work tree, git's index and the checked-out branch
are never touched, and concurrent writers never lose a file: a writer whose ref update lost
the race checks again on the new tip and retries.

Before publishing, the document is held to the rules `obsrepo check --base <base>` applies to
the branch: the per-document rules, and the repository rules over the base's documents and
every earlier proposal (`gate.near.NearState`, kept per process and moved along with the
tip: the tip taken as a change on a kept lookup store, so neither the first write nor a kept-open
writer reads or holds the whole tree).

Comprehension documents are the one kind edited in place (docs/design.md §14): `propose_edit`
replaces one such file's blob the same way (the trees along its path, one commit, the same
compare-and-swap), the new version made from the one at the tip it is committed on.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .. import errors
from ..errors import GitError, ObsrepoError, UsageError, WriteFault
from ..format.report import Issue
from ..format.rules import kind_of
from ..gate.cache import AnalysisCache
from ..gate.check import analyze_source
from ..gate.near import NearState
from ..gate.sources import DOCUMENT_ROOTS, entries
from ..gitstore import Entry, Git
from ..processes import exclusive
from .new import DocumentRefused, Draft, draft

DEFAULT_BRANCH = "obsrepo/proposals"
ATTEMPTS = 20  # ref updates lost to other writers before giving up


@dataclass(frozen=True)
class Proposed:
    id: str
    path: str
    content_hash: str
    commit: str
    branch: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "path": self.path, "content_hash": self.content_hash, "commit": self.commit,
                "branch": self.branch}


class TreeStates:
    """The rule state of the last tree written on, moved along commit by commit (one per process,
    repository and binding: the `Repository` object keeps it). A writer bound to a tenant is
    judged on the documents that tenant can see (docs/design.md §8a)."""

    def __init__(self, git: Git, binding: dict[str, str] | None = None) -> None:
        self.git = git
        self.binding = dict(binding or {})
        self.tip: str | None = None
        self.state: NearState | None = None

    def at(self, tip: str) -> NearState:
        if self.state is not None and self.tip == tip:
            return self.state
        if self.state is not None and self._advance(tip):
            return self.state
        self.state = NearState.at_commit(self.git, tip, self.binding)
        self.tip = tip
        return self.state

    def _advance(self, tip: str) -> bool:
        """Move the state from its tree to `tip`'s when files were only added, or comprehensions
        edited (another writer's proposals): read what was added. False when anything else changed."""
        assert self.tip is not None and self.state is not None
        changes = self.git.diff_trees([(tip, self.tip)], *DOCUMENT_ROOTS)[0]
        if any(c.status != "A" and not (c.status == "M" and kind_of(c.path) == "comprehension") for c in changes):
            return False  # a comprehension edited in place changes nothing the state keeps
        changes = [c for c in changes if c.status == "A"]
        added = entries(self.git, [Entry(c.new_mode, c.new_sha, c.path) for c in changes])
        analyses = analyze_source(added, AnalysisCache(None, {}, ""))  # a few documents: read them
        for change in changes:  # a file that is not a regular file: its path only
            self.state.add(change.path, analyses[change.path].facts if change.path in analyses else None)
        self.tip = tip
        return True

    def added(self, parent: str, tip: str, made: Draft) -> None:
        """Our own commit `tip` on `parent` added `made`."""
        if self.state is not None and self.tip == parent:
            self.state.add(made.path, made.analysis.facts)
            self.tip = tip

    def moved(self, parent: str, tip: str) -> None:
        """Our own commit `tip` on `parent` edited a comprehension (nothing the rules keep)."""
        if self.tip == parent:
            self.tip = tip


def propose(git: Git, states: TreeStates, front: dict[str, Any], body: str = "", *, branch: str | None = None,
            tool: str = "propose", now: datetime | None = None) -> Proposed:
    """Write the observation `new` would write as one commit on `branch`; refused writes change nothing."""
    branch = branch_name(git, branch)
    now = now or datetime.now(timezone.utc)  # the same timestamp on every attempt
    made = draft(front, body, now)
    blob: str | None = None

    def build(start: str) -> tuple[str, str]:
        nonlocal made, blob
        state = states.at(start)
        if state.taken(made.id, made.path):  # ids are global: keep clear of every tenant's
            made, blob = draft(front, body, now, state.taken), None
        problems = state.problems(made.path, made.analysis.facts or {})
        if problems:
            raise DocumentRefused(problems)
        blob = blob or git.write_blob(made.text)
        tree = git.tree_with_file(start, made.path, blob)
        if tree is None:
            raise _no_place(git, start, made.path, branch)
        return tree, f"{made.event}\n\nObsrepo-Tool: {tool}\nObsrepo-Observation: {made.id}\n"

    published = publish(git, branch, lambda: f"obsrepo {tool}: {made.id}", build)
    assert published is not None
    parent, new = published
    states.added(parent, new, made)
    return Proposed(made.id, made.path, made.content_hash, new, branch)


Edit = Callable[[str, bytes, NearState], tuple[bytes, str] | None]


def propose_edit(git: Git, states: TreeStates, path: str, edit: Edit, *, branch: str | None = None,
                 label: str) -> tuple[str, str] | None:
    """Replace the file at `path` (a comprehension document, the one kind edited in place) in
    one commit on `branch`: `edit(start, its bytes at start, start's rule state)` gives the new
    bytes and the commit message, or None when there is nothing to change (no commit). `edit`
    runs again on the new tip when another writer moved the branch meanwhile, so an edit is
    always made to the latest version. Returns (parent, commit) or None; a `path` missing at
    the tip is `edit`'s to refuse (it gets empty bytes)."""
    branch = branch_name(git, branch)

    def build(start: str) -> tuple[str, str] | None:
        found = [e for e in git.ls_tree(start, path) if e.path == path]
        old = found[0].sha if found and found[0].mode in ("100644", "100755") else None
        made = edit(start, git.read_blob(old) if old else b"", states.at(start))
        if made is None:
            return None
        data, message = made
        tree = git.tree_with_file(start, path, git.write_blob(data), replace=old) if old else None
        if tree is None:
            raise GitError(f"{path} is not a file at {start[:12]}", path=path)
        return tree, message

    published = publish(git, branch, label, build)
    if published is not None:
        states.moved(*published)
    return published


def branch_name(git: Git, branch: str | None) -> str:
    branch = branch or DEFAULT_BRANCH
    if not git.valid_branch_name(branch):
        raise UsageError(f"branch '{branch}' is not a valid branch name", parameter="branch")
    return branch


def publish(git: Git, branch: str, reason: str | Callable[[], str],
            build: Callable[[str], tuple[str, str] | None]) -> tuple[str, str] | None:
    """Commit the tree `build(start)` makes from the branch's tip (HEAD when the branch does not
    exist yet) and move the branch there with a compare-and-swap; when another writer moved it
    first, build again on its tip. `build` returns (tree, commit message), or None when there is
    nothing to write. `reason`, the reflog's line, may be a function of what `build` made.
    Returns (parent, new commit), or None when nothing was written."""
    identity = author_env()
    with _writers_queue(git):
        return _publish(git, branch, reason, build, identity)


@contextlib.contextmanager
def _writers_queue(git: Git) -> Iterator[None]:
    """Writers of one repository on this machine take turns (an exclusive `flock` on
    `<git common dir>/obsrepo/proposals.lock`), so that none of them loses the ref update again
    and again to the others; the compare-and-swap still guards against every other writer (a
    push, another machine's clone on a shared disk). Without the lock (no fcntl, a read-only git
    directory) writers only race."""
    if importlib.util.find_spec("fcntl") is None:  # pragma: no cover - not on this platform
        yield
        return
    try:
        common = git.dirs()[1]
        os.makedirs(os.path.join(common, "obsrepo"), exist_ok=True)
        handle = open(os.path.join(common, "obsrepo", "proposals.lock"), "a+b")  # noqa: SIM115 - closed below
    except OSError:
        yield
        return
    with handle, exclusive(handle, "the proposal writers' lock", handle.name):  # bounded, said (§8b)
        yield


def _publish(git: Git, branch: str, reason: str | Callable[[], str], build: Callable[[str], tuple[str, str] | None],
             identity: dict[str, str]) -> tuple[str, str] | None:
    for attempt in range(ATTEMPTS):
        tip, checked_out = git.branch_tip(branch)
        if checked_out:
            raise UsageError(f"branch '{branch}' is checked out in {checked_out}; a proposal never moves a "
                             "checked-out branch: name another branch, or write to the work tree instead",
                             parameter="branch")
        start = tip or git.resolve("HEAD", "branch")
        built = build(start)
        if built is None:
            return None
        new = _commit(git, built[0], start, built[1], identity)
        failure = git.update_ref(f"refs/heads/{branch}", new, tip, reason() if callable(reason) else reason)
        if failure is None:
            return start, new
        unwritable = _never_written(git, branch, failure)
        if unwritable is not None:
            raise unwritable
        moved, _ = git.branch_tip(branch)
        if moved == tip and "lock" not in failure:
            raise GitError(f"cannot update branch '{branch}': {failure}", branch=branch)
        # another writer won: check again on its tip, after a random wait that grows with each
        # loss, so that a writer slowed by catching up is not beaten every time (starvation)
        time.sleep(random.uniform(0, 0.002 * 2 ** min(attempt, 7)))
    raise GitError(f"branch '{branch}' kept moving under other writers; gave up after {ATTEMPTS} attempts",
                   branch=branch)


_LOCK_FILE = re.compile(r"Unable to create '([^']+\.lock)': File exists")


def _never_written(git: Git, branch: str, failure: str) -> ObsrepoError | None:
    """Why the ref update of `branch` can never succeed however often it is tried, or None when
    it lost to another writer (retried): a name that clashes with another branch or is too long
    for a file name (VALIDATION_ERROR naming --branch), or a lock file that outlived git's wait
    for it (GIT_ERROR naming the file)."""
    ref = f"refs/heads/{branch}"
    clash = git.ref_clash(ref)
    if clash is not None:
        other = clash.removeprefix("refs/heads/")
        return UsageError(f"branch '{branch}' cannot be created next to the existing '{other}': git keeps branches as "
                          "files and folders, so one name cannot be both a branch and a folder of branches; name "
                          "another branch", parameter="branch", branch=branch, clash=other)
    if "File name too long" in failure:
        return UsageError(f"branch '{branch[:60]}…' ({len(branch)} characters) is too long to be a file name, as git "
                          "keeps a branch; name a shorter one", parameter="branch", branch=branch)
    locked = _LOCK_FILE.search(failure)
    if locked is not None and os.path.exists(locked.group(1)):
        return GitError(f"branch '{branch}' is locked: {locked.group(1)} exists. If no git process is running in this "
                        "repository, one that crashed left it behind: remove that file and try again",
                        branch=branch, lock=locked.group(1))
    return None


def _no_place(git: Git, start: str, path: str, branch: str) -> ObsrepoError:
    """Why `path` has no place in `start`'s tree: a file where one of its folders should be
    (WRITE_ERROR, naming it: never a DUPLICATE_CONTENT about a file that is not there), else
    the file itself is there."""
    blocker = git.file_in_the_way(start, path)
    if blocker is None:
        return _duplicate(path)
    return WriteFault(f"cannot write {path} on branch '{branch}': {blocker} is a file at {start[:12]}, where a "
                      "folder should be", path=path, reason="a file where a folder should be", blocker=blocker,
                      branch=branch)


def _duplicate(path: str) -> DocumentRefused:
    return DocumentRefused([Issue(path, 1, 1, errors.DUPLICATE_CONTENT, "duplicate-content",
                                  f"the same content is already recorded in {path}")])


def _commit(git: Git, tree: str, parent: str, message: str, identity: dict[str, str]) -> str:
    try:
        return git.commit_tree(tree, parent, message, identity)
    except GitError as exc:
        if "identity" in exc.message or "tell me who you are" in exc.message.lower():
            raise GitError("git has no identity to commit with: set user.name and user.email (git config), "
                           "or OBSREPO_AUTHOR='Name <email>'") from None
        raise


_IDENTITY = re.compile(r"^\s*([^<>\n]*[^<>\s])\s*<([^<>\s]+)>\s*$")


def author_env() -> dict[str, str]:
    """OBSREPO_AUTHOR ("Name <email>") as git's author and committer; empty: git's own identity."""
    text = os.environ.get("OBSREPO_AUTHOR")
    if text is None:
        return {}
    match = _IDENTITY.match(text)
    if not match:
        raise UsageError(f"OBSREPO_AUTHOR must read 'Name <email>', got '{text}'", parameter="OBSREPO_AUTHOR")
    name, email = match.groups()
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email}


def default_source(git: Git) -> str:
    """`human/<name>` of whoever commits (OBSREPO_AUTHOR, else git's identity), for statements
    made without a --source."""
    text = os.environ.get("OBSREPO_AUTHOR") or ""
    match = _IDENTITY.match(text)
    name = match.group(1) if match else ""
    if not name:
        ident = git.run("var", "GIT_AUTHOR_IDENT", check=False).decode("utf-8", "replace")
        name = ident.split("<", 1)[0].strip()
    slug = re.sub(r"[^a-z0-9_.@+-]+", "-", name.lower()).strip("-.")
    return f"human/{slug or 'unknown'}"
