"""One document's text checked against the repository, nothing written (MCP `check_document`).

The text is placed where it would live (an observation under `observations/YYYY/MM/DD/<id>.md`
of its UTC timestamp, as `new` writes it; a comprehension at `comprehension/<id>.md`), then
checked as `check` checks a document added to the repository at a commit: the per-document
rules, and the repository rules (unique ids and content, references, relation targets, cycles,
merges, citations) over the commit's documents plus this one. Only the problems of this
document are reported. A document already at that path with the same bytes is the document
itself; different bytes are a change, judged as `check --base` judges one.

A tenant-bound caller's document is checked against the documents its binding can see: the
report never names, counts or hints at another tenant's documents (a clash with one is found
by `check` in CI, which sees everything).
"""

from __future__ import annotations

import re

from .. import errors
from ..format.analyze import analyze
from ..format.document import read_document
from ..format.report import NOT_WRITTEN, Issue, Report
from ..format.rules import Analysis, place
from ..gitstore import Git, blob_sha
from ..times import TimeError, parse_timestamp
from . import graph
from .cache import AnalysisCache
from .check import analyze_source
from .immutability import comprehension_edit
from .sources import commit as commit_source

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
UNNAMED = "document"


def document_path(data: bytes) -> str:
    """Where the document would live, from its `spec`, `id` and `timestamp` (placeholders for
    what it lacks: the per-document rules report those)."""
    front = read_document(NOT_WRITTEN, data).front or {}
    doc_id = front.get("id")
    name = doc_id if isinstance(doc_id, str) and _SAFE_ID.fullmatch(doc_id) else UNNAMED
    if front.get("spec") == "comprehension/v1":
        return f"comprehension/{name}.md"
    stamp = front.get("timestamp")
    try:
        moment = parse_timestamp(stamp) if isinstance(stamp, str) else None
    except TimeError:
        moment = None
    if moment is None:
        return f"observations/{name}.md"
    return f"observations/{moment.year:04d}/{moment:%m/%d}/{name}.md"


def check_text(git: Git, commit: str | None, data: bytes, binding: dict[str, str] | None = None) -> Report:
    """`check`'s report for one document added at `commit` (None: a repository without commits)."""
    path = document_path(data)
    analysis = analyze(path, data)
    report = Report(checked=1)
    report.issues.extend(analysis.issues)
    report.issues.extend(place(path, analysis))
    analyses: dict[str, Analysis] = {}
    existing_blob = None
    if commit is not None:
        source = commit_source(git, commit)
        cache = AnalysisCache.open(git)
        analyses = analyze_source(source, cache)
        cache.save()
        existing_blob = next((item.sha for item in source.listed if item.path == path), None)
    analyses = graph.in_view(analyses, binding or {})
    if binding and path not in analyses:
        existing_blob = None  # another tenant's document at this path reads as no document
    before = analyses.get(path)
    if existing_blob is not None and existing_blob != blob_sha(data):
        report.issues.extend(_changed(path, before, analysis))
    analyses[path] = analysis
    added = None if existing_blob == blob_sha(data) else {path}
    report.issues.extend(i for i in graph.repository_rules(analyses, added=added, change={path}) if i.path == path)
    return report


def _changed(path: str, before: Analysis | None, after: Analysis) -> list[Issue]:
    """A document at an existing path with other bytes: an observation may not change; a
    comprehension may, by the edit rules."""
    if after.kind == "observation":
        return [Issue(path, 1, 1, errors.IMMUTABLE_VIOLATION, "modified",
                      "an existing observation was modified; observations are immutable "
                      "(add a new observation that `corrects` it)")]
    if before is not None and before.facts is not None and after.facts is not None:
        return comprehension_edit(path, before.facts, after.facts)
    return []
