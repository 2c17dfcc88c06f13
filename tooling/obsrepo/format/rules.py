"""Per-document rules: what a document is, where it may live, and the facts kept about it.

`analyze` (in `analyze.py`, which loads `validate` and pydantic on demand) never raises on bad input. Its
result is plain JSON-able data so that it can be cached by blob id (content-addressed: a
cached result can never be stale); a run whose documents are all cached never loads pydantic.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from .. import errors
from .report import Issue
from .vocabulary import ACYCLIC_RELATIONS, COMPREHENSION_DIR, OBSERVATIONS_DIR  # noqa: F401 - re-exported

_EPOCH = datetime(1970, 1, 1)
_MOMENTS = ("timestamp", "created", "updated", "valid_from", "valid_until")  # the datetimes of a record
_OPTIONAL_MOMENTS = ("valid_from", "valid_until")  # None where the observation wrote no period


def _micros(moment: datetime) -> int:
    naive = moment.astimezone(timezone.utc).replace(tzinfo=None) if moment.tzinfo else moment
    return (naive - _EPOCH) // timedelta(microseconds=1)


_MICROS_RANGE = (_micros(datetime.min), _micros(datetime.max))


def moment_from_cache(value: tuple[int]) -> datetime:
    """A cached record's moment (a 1-tuple of UTC microseconds since the epoch) as naive UTC."""
    return _EPOCH + timedelta(microseconds=value[0])


@dataclass
class Analysis:
    """What one document says, as far as the repository rules care, and what is wrong."""

    kind: str  # "observation" | "comprehension" | "other"
    issues: list[Issue] = field(default_factory=list)
    facts: dict[str, Any] | None = None  # None when the document is invalid
    record: dict[str, Any] | None = None  # every value, for the index (not cached)
    # an invalid document's id, where it is well formed: [id, line, col] (the file name is
    # judged against it, so every problem of a file is reported at once)
    written_id: list[Any] | None = None

    def record_to_cache(self) -> dict[str, Any] | None:
        """The record as plain data (marshal): its datetimes (`_MOMENTS`) become 1-tuples of UTC
        microseconds since the epoch (records hold no tuples otherwise)."""
        if self.record is None:
            return None
        row = dict(self.record)
        for key in _MOMENTS:
            if isinstance(row.get(key), datetime):
                row[key] = (_micros(row[key]),)
        return row

    @staticmethod
    def record_from_cache(row: dict[str, Any]) -> dict[str, Any]:
        """Back from `record_to_cache`: datetimes as naive UTC (what the index stores)."""
        record = dict(row)
        for key in _MOMENTS:
            if isinstance(record.get(key), tuple):
                record[key] = moment_from_cache(record[key])
        return record

    @staticmethod
    def cached_moments_ok(row: dict[str, Any]) -> bool:
        """Whether a cached record's moments are what `record_to_cache` writes, for a reader
        that takes the record as stored (a foreign or tampered file is parsed again)."""
        low, high = _MICROS_RANGE
        for key in _MOMENTS:
            if key in row:
                value = row[key]
                if value is None and key in _OPTIONAL_MOMENTS:
                    continue
                if not (value.__class__ is tuple and len(value) == 1 and value[0].__class__ is int and low <= value[0] <= high):
                    return False
        return True

    def to_cache(self) -> list:
        row = [self.kind, [[i.line, i.col, i.code, i.rule, i.message, i.severity] for i in self.issues], self.facts]
        return row if self.written_id is None else [*row, self.written_id]

    @classmethod
    def from_cache(cls, path: str, row: list) -> Analysis:
        kind, issues, facts, *written = row
        return cls(kind, [Issue(path, *i) for i in issues], facts, written_id=written[0] if written else None)


def kind_of(path: str) -> str:
    if path.startswith(OBSERVATIONS_DIR):
        return "observation"
    if path.startswith(COMPREHENSION_DIR):
        return "comprehension"
    return "other"


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode  # built once


def content_hash(front: dict[str, Any], body: str) -> str:
    """docs/design.md §2.4: canonical JSON of the front matter without spec and id, a newline, the body."""
    core = {k: v for k, v in front.items() if k != "spec" and k != "id"}
    canonical = _CANONICAL(core)
    normalized = body.replace("\r\n", "\n").rstrip()
    return hashlib.sha256((canonical + "\n" + normalized).encode("utf-8", "surrogatepass")).hexdigest()


def placed(path: str, record: dict[str, Any]) -> bool:
    """Whether a valid document's record, read at `path`, breaks none of the rules of `place`:
    what `not place(path, analysis)` says, from the record alone (an observation's record holds
    `source`, a comprehension's `topic`)."""
    kind = kind_of(path)
    name = posixpath.basename(path)
    if kind == "other" or not name.endswith(".md") or name[:-3] != record.get("id"):
        return False
    if kind == "observation":
        return "source" in record
    return "topic" in record and posixpath.dirname(path) == COMPREHENSION_DIR.rstrip("/")


_FOLDER = {"observation": OBSERVATIONS_DIR, "comprehension": COMPREHENSION_DIR}


def _named_after(path: str, name: str, doc_id: str, at: tuple[int, int]) -> list[Issue]:
    """The file name must be the id's (`<id>.md`)."""
    if name[:-3] == doc_id:
        return []
    return [Issue(path, at[0], at[1], errors.VALIDATION_ERROR, "id-filename-mismatch",
                  f"id '{doc_id}' does not match the file name '{name}' (expected {doc_id}.md)")]


def place(path: str, analysis: Analysis) -> list[Issue]:
    """Rules that depend on where the file is: folder, extension, file name = id."""
    issues: list[Issue] = []
    name = posixpath.basename(path)
    if analysis.kind == "other":
        return issues
    if not name.endswith(".md"):
        issues.append(Issue(path, 1, 1, errors.VALIDATION_ERROR, "file-extension", "documents are Markdown files named <id>.md"))
        return issues
    facts = analysis.facts
    if facts is None:  # invalid: the file name is still judged against a well-formed id
        if analysis.written_id is not None:
            written, line, col = analysis.written_id
            issues.extend(_named_after(path, name, written, (line, col)))
        return issues
    if facts["kind"] != analysis.kind:
        line, col = facts["loc"].get("spec", (1, 1))
        issues.append(
            Issue(path, line, col, errors.VALIDATION_ERROR, "wrong-folder",
                  f"{facts['kind']} documents belong under {_FOLDER[facts['kind']]}, not {_FOLDER[analysis.kind]}")
        )
    issues.extend(_named_after(path, name, facts["id"], facts["loc"].get("id", (1, 1))))
    if analysis.kind == "comprehension" and posixpath.dirname(path) != "comprehension":
        issues.append(Issue(path, 1, 1, errors.VALIDATION_ERROR, "layout", "comprehension documents live directly in comprehension/"))
    return issues
