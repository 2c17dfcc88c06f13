"""The uncommitted drafts of the work tree, and which of them pass the check.

A draft is a `*.md` file under `observations/` or `comprehension/` whose path is not in the
tree of HEAD (untracked, or staged but not committed). A work-tree file at a committed path
is never a draft: the committed document stays what readers see (a modified observation is
reported, immutability being `check`'s to enforce).

A draft passes when its per-document rules hold (the strict reader, the model, the file name
and folder) and, against the indexed commit and the other drafts, the repository rules `check`
applies (the same functions, asking the index through the judge's `Facts`): its id is new, its
content is not already there in the same tenant, what it corrects, retracts, gives feedback on
or reclassifies exists, and its relations have targets, close no cycle, merge no entity twice
and orphan no other relation. Only valid observation drafts go into the overlay; every other
draft is reported.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from .. import errors
from ..format.document import MAX_DOCUMENT_BYTES, too_large
from ..format.report import Issue
from ..format.rules import kind_of, place
from ..format.vocabulary import DOCUMENT_ROOTS, is_document_name
from ..gate.change import looked_up
from ..gate.graph import graph_rules
from ..gate.judge import Facts, Layered, TreeFacts
from ..gate.judge import judge as judged
from ..gate.sources import not_a_file
from ..gitstore import Git, blob_sha
from .lookup import named_observations

FULL_RESCAN_ABOVE = 2000  # more candidate paths than this: list every draft from git instead


@dataclass
class Draft:
    path: str
    blob: str
    issues: list[Issue]  # per-document problems
    facts: dict[str, Any] | None
    record: dict[str, Any] | None


@dataclass
class DraftState:
    drafts: dict[str, Draft] = field(default_factory=dict)
    memo: dict[tuple[str, str], tuple[list, Any, Any]] = field(default_factory=dict)  # (kind, blob) → analysis
    modified: dict[str, str] = field(default_factory=dict)  # committed path → work-tree blob that differs


@dataclass
class _File:
    """A work-tree file under the document folders: its blob id, and its bytes or why they are not read."""

    blob: str
    data: bytes | None
    problem: Issue | None = None


def _read_file(root: str, rel: str) -> _File | None:
    """The file at `rel`, or None when there is no file (gone, a folder, unreadable). A symlink
    is never followed, and a file over the document size limit is hashed, not held."""
    full = os.path.join(root, rel)
    try:
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            return _File(blob_sha(os.fsencode(os.readlink(full))), None, not_a_file(rel, "120000"))
        if not stat.S_ISREG(st.st_mode):
            return None
        with open(full, "rb") as handle:
            if st.st_size <= MAX_DOCUMENT_BYTES:
                data = handle.read(MAX_DOCUMENT_BYTES + 1)
                if len(data) <= MAX_DOCUMENT_BYTES:
                    return _File(blob_sha(data), data)
                handle.seek(0)
            return _large(handle, rel)
    except OSError:
        return None


def _large(handle: BinaryIO, rel: str) -> _File:
    """A file over the size limit: its blob id, read a block at a time, and its problem."""
    size = os.fstat(handle.fileno()).st_size
    digest = hashlib.sha1(b"blob %d\0" % size)
    read = 0
    while block := handle.read(1 << 20):
        digest.update(block)
        read += len(block)
    if read != size:  # it changed while read: the next event brings it again
        raise OSError("the file changed while it was read")
    return _File(digest.hexdigest(), None, too_large(rel, size))


def list_drafts(git: Git) -> set[str]:
    """Every draft path, from git: untracked files and files staged but not in HEAD."""
    untracked = git.run("ls-files", "-z", "-o", "--", *DOCUMENT_ROOTS).split(b"\0")
    staged = git.run("diff-index", "-z", "--cached", "--name-only", "--diff-filter=A", "HEAD", "--",
                     *DOCUMENT_ROOTS, check=False).split(b"\0")
    paths = (raw.decode("utf-8", "surrogateescape") for raw in untracked + staged if raw)
    return {path for path in paths if is_document_name(path)}


def committed_blobs(git: Git, paths: list[str]) -> dict[str, str]:
    """path → blob id in HEAD's tree, for those of `paths` that are there."""
    if not paths:
        return {}
    out = git.run("--literal-pathspecs", "ls-tree", "-z", "--full-tree", "HEAD", "--", *paths, check=False)
    found = {}
    for record in out.split(b"\0"):
        if record:
            meta, path = record.split(b"\t", 1)
            found[path.decode("utf-8", "surrogateescape")] = meta.decode().split(" ")[2]
    return found


def refresh(state: DraftState, git: Git, candidates: set[str], everything: bool = False) -> list[Issue]:
    """Bring `state.drafts` up to date with the work tree: `candidates` are the paths that may
    have changed; with `everything` (or too many candidates) every draft is listed from git as
    well. Returns problems of committed paths modified in the work tree."""
    root = git.root
    notes: list[Issue] = []
    named = {p for p in candidates if is_document_name(p)}
    if everything or len(named) > FULL_RESCAN_ABOVE:
        paths = list_drafts(git)
        for gone in set(state.drafts) - paths:
            del state.drafts[gone]
        rest = named - paths if len(named) <= FULL_RESCAN_ABOVE else set()
        look_at = sorted(paths | rest)
        in_head: dict[str, str] = committed_blobs(git, sorted(rest))
    else:
        look_at = sorted(named)
        in_head = committed_blobs(git, look_at)
    for path in look_at:
        file = _read_file(root, path)
        if path in in_head:  # a committed path: never a draft
            state.drafts.pop(path, None)
            blob = file.blob if file is not None else None
            if blob is not None and blob != in_head[path] and kind_of(path) == "observation":
                if state.modified.get(path) != blob:
                    notes.append(Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, "modified",
                                       "a committed observation was changed in the work tree; the committed version "
                                       "stays in the index (observations are immutable: add a new one)"))
                state.modified[path] = blob
            else:
                state.modified.pop(path, None)
            continue
        state.modified.pop(path, None)
        if file is None:
            state.drafts.pop(path, None)
            continue
        current = state.drafts.get(path)
        if current is not None and current.blob == file.blob:
            continue
        if file.problem is not None:  # a symlink, a file too large to read: never analysed
            state.drafts[path] = Draft(path, file.blob, [file.problem], None, None)
            continue
        state.drafts[path] = _analyze(state, path, file.blob, file.data or b"")
    return notes


def _analyze(state: DraftState, path: str, blob: str, data: bytes) -> Draft:
    from ..format.analyze import analyze
    from ..format.rules import Analysis

    key = (kind_of(path), blob)
    if key not in state.memo:
        analysis = analyze(path, data, with_record=True)
        state.memo[key] = ([i.as_dict() for i in analysis.issues], analysis.facts, analysis.record)
    issues, facts, record = state.memo[key]
    analysis = Analysis(key[0], [Issue(path, i["line"], i["col"], i["code"], i["rule"], i["message"]) for i in issues], facts)
    return Draft(path, blob, analysis.issues + place(path, analysis), facts, record)


def judge(state: DraftState, index_file: str) -> tuple[list[tuple[str, str, dict[str, Any]]], dict[str, list[Issue]]]:
    """(valid observation drafts as (path, blob, record), problems by path) against the indexed
    commit and each other."""
    problems: dict[str, list[Issue]] = {p: list(d.issues) for p, d in state.drafts.items() if d.issues}
    fine = {p: d for p, d in state.drafts.items() if not d.issues and d.facts is not None}
    by_id: dict[str, list[str]] = {}
    for path, draft in fine.items():
        by_id.setdefault((draft.facts or {})["id"], []).append(path)
    for doc_id, paths in by_id.items():
        if len(paths) > 1:
            for path in paths:
                others = ", ".join(p for p in paths if p != path)
                _flag(problems, fine[path], "id", errors.DUPLICATE_ID, "duplicate-id",
                      f"id '{doc_id}' is also used by the draft {others}")
    documents = [(p, d.facts) for p, d in sorted(fine.items()) if d.facts is not None]
    drafts = TreeFacts(documents)
    committed = IndexFacts(index_file, documents)
    for path, facts in documents:  # the rules `check` applies, tenant and all
        found = judged(path, facts, Drafted(drafts, committed))
        if found:
            problems.setdefault(path, []).extend(found)
    for issue in graph_rules(documents, Layered(drafts, committed)):
        problems.setdefault(issue.path, []).append(issue)
    valid = [(p, d.blob, d.record) for p, d in sorted(fine.items())
             if p not in problems and kind_of(p) == "observation" and d.record is not None]
    return valid, problems


def _flag(problems: dict[str, list[Issue]], draft: Draft, key: str, code: str, rule: str, message: str) -> None:
    line, col = ((draft.facts or {}).get("loc") or {}).get(key, (1, 1))
    problems.setdefault(draft.path, []).append(Issue(draft.path, line, col, code, rule, message))


class IndexFacts(TreeFacts):
    """What the indexed commit holds that the drafts name (their ids, content hashes, targets,
    the graph of each relation type they add: `gate.change.looked_up`), read once per judgement."""

    id_taken = "id '{id}' is already committed ({path}); the committed document stays"
    content_taken = "the same content is already committed in this tenant"

    def __init__(self, index_file: str, drafts: list[tuple[str, dict[str, Any]]]) -> None:
        found: list[tuple[str, dict[str, Any]]] = []
        if drafts:
            from .reader import open_internal
            from .schema import NOW

            con = open_internal(index_file)
            try:
                def rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
                    return list(con.execute(sql, params).fetchall())

                found = looked_up(drafts, named_observations(rows, f"(SELECT * FROM obs_versions WHERE removed_seq = {NOW})"),
                                  set())
                ids = sorted({facts["id"] for _, facts in drafts})
                found += [(path, {"kind": "comprehension", "id": doc_id}) for doc_id, path in rows(
                    f"SELECT id, path FROM comp_versions WHERE removed_seq = {NOW} AND id IN (SELECT unnest(?::VARCHAR[]))",
                    [ids])]
            finally:
                con.close()
        super().__init__(found)


class Drafted(Layered):
    """A draft's lookups: its id and content clash with the committed documents (the drafts
    among themselves are compared apart), its targets are committed documents or drafts."""

    def __init__(self, drafts: Facts, committed: Facts) -> None:
        super().__init__(drafts, committed)
        self.id_taken, self.content_taken = committed.id_taken, committed.content_taken

    def holder(self, doc_id: str) -> str | None:
        return self.then.holder(doc_id)

    def recorded(self, digest: str) -> str | None:
        return self.then.recorded(digest)
