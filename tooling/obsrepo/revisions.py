"""Revision names as text: which can never name exactly one commit (docs/design.md §8a), and
how an error repeats one. Pure text, no git: `gitstore.Git.resolve` asks git about the rest."""

from __future__ import annotations

import re

FULL_SHA = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # SHA-1 or SHA-256 object format
# parts that may hold any text without changing how many commits a name selects: a reflog
# selector (`main@{2026-01-01 10:00}`) and a peel or message search (`HEAD^{/fix: x..y}`)
_BRACED = re.compile(r"@\{[^}]*\}|\^\{[^}]*\}")
_SEVERAL = re.compile(r"\^[@!-]")  # REV^@ (the parents), REV^! and REV^-N (ranges)


def revision_syntax_problem(rev: str) -> str | None:
    """Why `rev` can never name exactly one commit, or None; pure text, no git."""
    if not rev:
        return "is empty: name one commit (HEAD, a branch, a tag, a sha)"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in rev):
        return "holds a line break or another control character"
    if rev[0] == "^":
        return "excludes commits (^REV) instead of naming one: name one commit"
    if rev[0] == "-":
        return "begins with '-': a revision never does (is it an option?)"
    core = _BRACED.sub("", rev)
    if ".." in core:
        return "is a range (A..B or A...B): name one commit"
    if _SEVERAL.search(core):
        return "selects several commits (REV^@, REV^!, REV^-): name one commit"
    if ":" in core:
        return "names a file or an index entry (REV:path), not a commit"
    return None


def quoted(rev: str) -> str:
    """The name as an error repeats it: quoted, escaped, never longer than 80 characters."""
    shown = rev if len(rev) <= 80 else rev[:80] + "…"
    return repr(shown)
