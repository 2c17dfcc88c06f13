"""The only package that talks to git. It runs the git command line and returns plain data.

Blobs are read through one `git cat-file --batch` process fed by a writer thread, so
reads are pipelined rather than lock-stepped (measured: ~30,000 blobs/s).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from ..errors import GitError, NotFoundError, UsageError
from ..revisions import FULL_SHA, quoted, revision_syntax_problem
from .blobs import GIT_ENV, BlobReader
from .blobs import blob_sha as blob_sha  # the id of a content, asked by the gate and the drafts

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
NULL_SHA = "0" * 40
NO_COMMITS = "the repository has no commits yet: commit the documents first (git add, git commit)"


ATTR_SLICE = 20_000  # paths per `git check-attr`


class Entry(NamedTuple):
    """A file as git lists it: mode (octal text), blob sha, path relative to the root (a tuple:
    a tree of a million documents lists a million of them)."""

    mode: str
    sha: str
    path: str


class Change(NamedTuple):
    """One line of `git diff --raw --no-renames` (a tuple: a full build makes 100,000 of them)."""

    status: str
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    path: str


def raw_records(tokens: list[bytes]) -> Iterator[Change | bytes]:
    """The one reader of git's `--raw -z` output: walks its NUL-separated tokens and yields a
    `Change` for each `:modes shas status` token and the path after it, and every other token
    (a commit header of `log`/`diff-tree --stdin`) as it is."""
    i, count = 0, len(tokens)
    while i < count:
        token = tokens[i]
        if token[:1] != b":":
            token = token.strip()
        if token[:1] == b":" and i + 1 < count:
            old_mode, new_mode, old_sha, new_sha, status = token[1:].decode().split(" ")
            yield Change(status[0], old_mode, new_mode, old_sha, new_sha, tokens[i + 1].decode("utf-8", "surrogateescape"))
            i += 2
        else:
            yield tokens[i]
            i += 1


# every git process: no optional locks, messages we can parse, and objects as stored — a
# `refs/replace/` ref must never make an object id read as other content


_COMMITTED: dict[str, int] = {}  # commit sha → committer time (unix seconds)


class Git:
    def __init__(self, root: str, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = env or {}
        self._dirs: tuple[str, str] | None = None

    def with_index(self, index_file: str) -> Git:
        """The same repository with another index file (GIT_INDEX_FILE), e.g. a commit's tree
        read into a temporary index so that index-only commands see that commit."""
        return Git(self.root, {**self.env, "GIT_INDEX_FILE": index_file})

    def dirs(self) -> tuple[str, str]:
        """(the git directory, the common one: where refs live, shared by linked work trees),
        both absolute; asked of git once per object."""
        if self._dirs is None:
            out = self.run("rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir").decode().splitlines()
            self._dirs = (out[0], out[1])
        return self._dirs

    def run(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        env = {**os.environ, **GIT_ENV, **self.env}
        try:
            proc = subprocess.run(
                ["git", "-C", self.root, *args], input=input, capture_output=True, env=env
            )
        except FileNotFoundError:
            raise GitError("git is not installed or not on PATH") from None
        if check and proc.returncode != 0:
            message = proc.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed"
            raise GitError(message, command=["git", *args])
        return proc.stdout

    def run_together(self, *commands: tuple[str, ...]) -> list[bytes]:
        """Several read-only git commands at once, each its own process (`run` each), their
        outputs in order: passes over the work tree that do not wait for each other."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(commands)) as pool:
            return list(pool.map(lambda args: self.run(*args), commands))

    @staticmethod
    def discover(cwd: str) -> Git | None:
        """The repository that contains `cwd`, or None outside any repository."""
        try:
            proc = subprocess.run(
                ["git", "-C", cwd, "rev-parse", "--show-toplevel"], capture_output=True
            )
        except FileNotFoundError:
            return None
        if proc.returncode != 0:
            return None
        return Git(proc.stdout.decode().strip())

    @staticmethod
    def git_folder_holding(path: str) -> tuple[str, bool] | None:
        """(the git folder, whether it is a bare repository) when `path` lies inside a git
        folder — a bare repository or a repository's `.git` — which has no work tree; else None."""
        try:
            proc = subprocess.run(["git", "-C", path, "rev-parse", "--is-inside-git-dir", "--is-bare-repository",
                                   "--absolute-git-dir"], capture_output=True)
        except FileNotFoundError:
            return None
        answer = proc.stdout.decode(errors="replace").splitlines()
        if proc.returncode != 0 or len(answer) != 3 or answer[0] != "true":
            return None
        return answer[2], answer[1] == "true"

    @staticmethod
    def at(path: str) -> Git:
        """The repository that contains `path`; outside any, GIT_ERROR (every command works on
        a git repository: none reads or writes a plain folder)."""
        git = Git.discover(path)
        if git is None:
            where = os.path.abspath(path)
            raise GitError(f"{where} is not inside a git repository; obsrepo works on a git repository "
                           "(run it from inside one)", cwd=where)
        return git

    @staticmethod
    def init(folder: str) -> Git:
        """A new repository in `folder`, with the user's own defaults (the initial branch name)."""
        Git(folder).run("init", "-q")
        return Git.at(folder)

    def is_shallow(self) -> bool:
        return self.run("rev-parse", "--is-shallow-repository").strip() == b"true"

    def has_head(self) -> bool:
        return self.run("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False) != b""

    def resolve(self, rev: str, parameter: str = "rev") -> str:
        """The one full commit sha that `rev` names (docs/design.md §8a "One revision, one
        commit"). A name that cannot name exactly one commit (`^REV`, `-x`, a range, `REV:path`,
        `REV^@`, an empty name, a line break) or that names a tree, blob or other object is a
        VALIDATION_ERROR naming `parameter`; a well-formed name that does not resolve is
        REF_NOT_FOUND; GIT_ERROR if the repository has no commits at all (or HEAD names none) or
        is shallow and the commit may simply be missing. The common case is one git process."""
        problem = revision_syntax_problem(rev)
        if problem:
            raise UsageError(f"{parameter} {quoted(rev)} {problem}", parameter=parameter, rev=rev)
        out = self.run("rev-parse", "--verify", "-q", "--end-of-options", f"{rev}^{{commit}}", check=False).split()
        if len(out) == 1 and FULL_SHA.fullmatch(out[0]):
            return out[0].decode()
        if out:  # git answered something other than one object id: never guess which commit
            raise UsageError(f"{parameter} {quoted(rev)} does not name exactly one commit", parameter=parameter, rev=rev)
        named = self.run("rev-parse", "--verify", "-q", "--end-of-options", rev, check=False).strip()
        kind = self.run("cat-file", "-t", named.decode(), check=False).decode().strip() if FULL_SHA.fullmatch(named) else ""
        if kind:  # an object that exists and is no commit (a full sha of a missing object is not found)
            raise UsageError(f"{parameter} {quoted(rev)} names a {kind}, not a commit", parameter=parameter, rev=rev)
        if not self.has_head() and (rev == "HEAD" or not self.run("for-each-ref", "--count=1", check=False).strip()):
            raise GitError(NO_COMMITS, parameter=parameter, rev=rev)
        if self.is_shallow():
            raise GitError(
                f"revision '{rev}' is not in this shallow clone; fetch the full history "
                "(actions/checkout with fetch-depth: 0, or git fetch --unshallow)",
                parameter=parameter,
                rev=rev,
            )
        raise NotFoundError(f"revision '{rev}' does not exist", parameter=parameter, rev=rev)

    def committed_at(self, commit: str) -> int:
        """The committer time of `commit` in unix seconds (a commit never changes: asked once per
        process): the valid time a read without `--as-of` answers for (docs/design.md §19)."""
        known = _COMMITTED.get(commit)
        if known is None:
            known = _COMMITTED[commit] = int(self.run("show", "-s", "--format=%ct", commit, "--").strip() or 0)
        return known

    def merge_base(self, a: str, b: str) -> str:
        out = self.run("merge-base", a, b, check=False).strip()
        if not out:
            hint = " (the clone is shallow: fetch the full history)" if self.is_shallow() else ""
            raise GitError(f"no common history between {a[:12]} and {b[:12]}{hint}", base=a, head=b)
        return out.decode()

    def ls_files(self, *pathspecs: str) -> list[Entry]:
        """Files in git's index (the staging area)."""
        out = self.run("ls-files", "-s", "-z", "--", *pathspecs)
        entries = []
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, path = record.split(b"\t", 1)
            mode, sha, stage = meta.decode().split(" ")
            if stage != "0":
                raise GitError(f"{path.decode('utf-8', 'replace')} has unresolved merge conflicts")
            entries.append(Entry(sys.intern(mode), sha, path.decode("utf-8", "surrogateescape")))
        return entries

    def ls_tree(self, commit: str, *pathspecs: str) -> list[Entry]:
        out = self.run("ls-tree", "-r", "-z", "--full-tree", commit, "--", *pathspecs)
        entries = []
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, path = record.split(b"\t", 1)
            mode, _kind, sha = meta.decode().split(" ")
            entries.append(Entry(sys.intern(mode), sha, path.decode("utf-8", "surrogateescape")))
        return entries

    def ls_tree_at(self, commit: str, paths: Iterable[str]) -> list[Entry]:
        """`commit`'s entries at exactly these paths (those it has), a few hundred a process."""
        named = sorted(paths)
        entries: list[Entry] = []
        for start in range(0, len(named), 500):
            entries += self.ls_tree(commit, *(f":(literal){p}" for p in named[start:start + 500]))
        return entries

    def diff(self, *args: str) -> list[Change]:
        """`git diff --raw -z --no-renames ARGS`: renames are never detected away."""
        out = self.run("diff", "--raw", "-z", "--no-renames", "--no-ext-diff", "--abbrev=40", *args)
        return [record for record in raw_records(out.split(b"\0")) if isinstance(record, Change)]

    def commits_between(self, base: str, head: str = "HEAD") -> list[tuple[str, tuple[str, ...]]]:
        """Every commit in `base..head` with its parents, parents before children."""
        out = self.run("rev-list", "--topo-order", "--reverse", "--parents", f"{base}..{head}", "--")
        commits = []
        for line in out.decode().splitlines():
            sha, *parents = line.split()
            commits.append((sha, tuple(parents)))
        return commits

    def diff_trees(self, pairs: list[tuple[str, str | None]], *pathspecs: str) -> list[list[Change]]:
        """For each (commit, parent) the raw changes from parent to commit (from the empty tree
        when parent is None), all from one `git diff-tree --stdin`. Trees hold blobs as stored:
        no filter, no rename detection, no submodule setting applies."""
        if not pairs:
            return []
        lines = "".join(f"{c} {p}\n" if p else f"{c}\n" for c, p in pairs)
        out = self.run("diff-tree", "--stdin", "-r", "-z", "--raw", "--root", "--always", "--no-renames",
                       "--ignore-submodules=none", "--abbrev=40", "--", *pathspecs, input=lines.encode())
        blocks: list[list[Change]] = []
        for record in raw_records(out.split(b"\0")):
            if isinstance(record, Change):
                blocks[-1].append(record)
            elif record.strip():  # the header of the next (commit, parent) pair
                blocks.append([])
        if len(blocks) != len(pairs):
            raise GitError(f"git diff-tree answered {len(blocks)} of {len(pairs)} comparisons")
        return blocks

    def check_attr(self, paths: list[str], attributes: tuple[str, ...], cached: bool = False) -> list[tuple[str, str, str]]:
        """(path, attribute, value) for every attribute git sets on a path (neither unspecified
        nor unset); `cached` reads .gitattributes from the index only. Asked in slices: git
        answers every attribute of every path, several times the size of the paths."""
        found: list[tuple[str, str, str]] = []
        for start in range(0, len(paths), ATTR_SLICE):
            found += self._check_attr(paths[start:start + ATTR_SLICE], attributes, cached)
        return found

    def _check_attr(self, paths: list[str], attributes: tuple[str, ...], cached: bool) -> list[tuple[str, str, str]]:
        stdin = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        out = self.run("check-attr", "-z", "--stdin", *(["--cached"] if cached else []), *attributes, input=stdin)
        # the common answer, nothing set on any path, found without splitting the answer up
        # (a value is the only field between NULs that can read `unspecified`: paths have a folder)
        if out.count(b"\0unspecified\0") + out.count(b"\0unset\0") == len(paths) * len(attributes):
            return []
        t = out.split(b"\0")
        return [(p.decode("utf-8", "surrogateescape"), a.decode(), v.decode("utf-8", "replace"))
                for p, a, v in zip(t[0::3], t[1::3], t[2::3]) if v not in (b"unspecified", b"unset")]

    def read_blobs(self, shas: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """Yield (sha, content) for each sha, pipelined through one cat-file process."""
        wanted = list(shas)
        if not wanted:
            return
        proc = subprocess.Popen(
            ["git", "-C", self.root, "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=1 << 20,
            env={**os.environ, **GIT_ENV},
        )

        assert proc.stdin is not None and proc.stdout is not None
        stdin = proc.stdin

        def feed() -> None:
            try:
                stdin.write("".join(f"{s}\n" for s in wanted).encode())
                stdin.close()
            except BrokenPipeError:
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        out = proc.stdout
        try:
            for sha in wanted:
                header = out.readline().split()
                if len(header) != 3:
                    raise GitError(f"object {sha} is missing from the repository", sha=sha)
                size = int(header[2])
                data = out.read(size)
                out.read(1)
                yield sha, data
        finally:
            out.close()
            proc.wait()
            writer.join()

    def blob_reader(self) -> BlobReader:
        """A `cat-file --batch` process kept open for many reads (a worker of a parallel build
        reads its chunks through one: no process start and pack index load per chunk)."""
        return BlobReader(self.root)

    def read_blob(self, sha: str) -> bytes:
        for _, data in self.read_blobs([sha]):
            return data
        raise GitError(f"object {sha} is missing")  # pragma: no cover


    # -- plumbing writes (the write path: docs/design.md §11) ---------------------------------
    def branch_tip(self, branch: str) -> tuple[str | None, str | None]:
        """(tip sha, path of a work tree that has it checked out) of `refs/heads/<branch>`;
        (None, None) when the branch does not exist."""
        ref = f"refs/heads/{branch}"
        out = self.run("for-each-ref", "--format=%(refname) %(objectname) %(worktreepath)", ref)
        for line in out.decode("utf-8", "surrogateescape").splitlines():
            name, sha, worktree = line.split(" ", 2)
            if name == ref:  # the pattern also matches the branches inside it (`pb/x` for `pb`)
                return sha, worktree or None
        return None, None

    def ref_clash(self, ref: str) -> str | None:
        """An existing ref that keeps `ref` from ever being created: one named like a folder of it
        (`refs/heads/pb` for `refs/heads/pb/x`) or one inside it (`refs/heads/pb/x` for
        `refs/heads/pb`). Git keeps refs as files and folders: a name cannot be both."""
        parts = ref.split("/")
        folders = ["/".join(parts[:i]) for i in range(3, len(parts))]
        out = self.run("for-each-ref", "--format=%(refname)", ref, *folders).decode("utf-8", "surrogateescape")
        for name in out.splitlines():
            if name in folders or name.startswith(f"{ref}/"):
                return name
        return None

    def valid_branch_name(self, branch: str) -> bool:
        if not branch or branch.startswith("-") or "\x00" in branch:
            return False
        return self.run("check-ref-format", "--branch", branch, check=False).strip() != b""

    def write_blob(self, data: bytes) -> str:
        """Store `data` as a blob (as is: no filter applies) and return its id."""
        return self.run("hash-object", "-w", "--no-filters", "--stdin", input=data).decode().strip()

    def tree_with_file(self, commit: str, path: str, blob: str, mode: str = "100644", replace: str | None = None) -> str | None:
        """The tree of `commit` with one more file at `path`, written to the object store; None
        when something already exists at `path` (or a file stands where a folder should be).
        With `replace` (the blob expected at `path`), the file there gets `blob` instead and
        keeps its mode; None when `path` does not hold exactly that file.

        Only the trees along `path` are read (one `cat-file --batch`) and rewritten (one
        `mktree --batch`), so the cost does not grow with the size of the repository."""
        parts = path.split("/")
        folders = ["/".join(parts[:i]) for i in range(len(parts))]  # "", "observations", …
        names = [f"{commit}^{{tree}}"] + [f"{commit}:{folder}" for folder in folders[1:]]
        out = self.run("cat-file", "--batch", input="".join(f"{n}\n" for n in names).encode())
        trees: list[list[tuple[str, bytes, str]] | None] = []
        at = 0
        for _name in names:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            if header[-1] == b"missing" or len(header) != 3:
                trees.append(None)
                at = end + 1
                continue
            size = int(header[2])
            if header[1] != b"tree":
                return None  # a file where a folder should be
            trees.append(_parse_tree(out[end + 1 : end + 1 + size]))
            at = end + 2 + size
        child_mode, child_sha = mode, blob
        batch: list[str] = []
        expected: list[str] = []
        for depth in range(len(parts) - 1, -1, -1):
            entries = list(trees[depth] or [])
            name = parts[depth].encode("utf-8", "surrogateescape")
            if depth == len(parts) - 1:
                present = [e for e in entries if e[1] == name]
                if replace is None and present:
                    return None
                if replace is not None:
                    if len(present) != 1 or present[0][2] != replace or present[0][0] not in ("100644", "100755"):
                        return None
                    child_mode = present[0][0]
            entries = [e for e in entries if e[1] != name] + [(child_mode, name, child_sha)]
            child_sha = _tree_sha(entries)
            child_mode = "40000"
            batch.append("".join(f"{m} {'tree' if m == '40000' else 'commit' if m == '160000' else 'blob'} {s}\t"
                                 f"{n.decode('utf-8', 'surrogateescape')}\n" for m, n, s in entries) + "\n")
            expected.append(child_sha)
        written = self.run("mktree", "--batch", input="".join(batch).encode("utf-8", "surrogateescape")).decode().split()
        if written != expected:
            raise GitError(f"git wrote trees {written} where {expected} were expected")
        return child_sha

    def file_in_the_way(self, commit: str, path: str) -> str | None:
        """The first folder of `path` that is not a folder at `commit` (a file, a symlink, a
        submodule), or None: why `tree_with_file` found no place when `path` itself is free."""
        parts = path.split("/")
        folders = ["/".join(parts[:i]) for i in range(1, len(parts))]
        out = self.run("cat-file", "--batch-check=%(objecttype)", input="".join(f"{commit}:{f}\n" for f in folders).encode())
        for folder, kind in zip(folders, out.decode("utf-8", "replace").splitlines()):
            if kind.endswith(" missing"):
                return None
            if kind != "tree":
                return folder
        return None

    def commit_tree(self, tree: str, parent: str, message: str, env: dict[str, str] | None = None) -> str:
        """A new commit object (no ref moves): `tree` on top of `parent`."""
        git = Git(self.root, {**self.env, **(env or {})})
        return git.run("commit-tree", tree, "-p", parent, "-F", "-", input=message.encode("utf-8")).decode().strip()

    def update_ref(self, ref: str, new: str, old: str | None, reason: str) -> str | None:
        """Compare and swap: point `ref` at `new` only if it still points at `old` (`old` None:
        only if it does not exist yet). None when done, else git's reason (the ref moved
        meanwhile, or another writer holds its lock). A lock held by another git process is
        waited for up to a second (git's own default is a tenth), so a lock still there after
        that is most likely left behind by a process that crashed."""
        try:
            self.run("-c", "core.filesRefLockTimeout=1000", "update-ref", "-m", reason, ref, new, old or NULL_SHA)
        except GitError as exc:
            return exc.message
        return None


def _parse_tree(data: bytes) -> list[tuple[str, bytes, str]]:
    """(mode, name, sha) of each entry of a raw tree object."""
    entries = []
    at = 0
    while at < len(data):
        space = data.index(b" ", at)
        nul = data.index(b"\0", space)
        entries.append((data[at:space].decode(), data[space + 1 : nul], data[nul + 1 : nul + 21].hex()))
        at = nul + 21
    return entries


def _tree_sha(entries: list[tuple[str, bytes, str]]) -> str:
    """The id git gives a tree of these entries (sorted as git sorts them: a folder's name as if
    it ended with '/')."""
    import hashlib

    ordered = sorted(entries, key=lambda e: e[1] + b"/" if e[0] == "40000" else e[1])
    body = b"".join(m.encode() + b" " + n + b"\0" + bytes.fromhex(s) for m, n, s in ordered)
    return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()
