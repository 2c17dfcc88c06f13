"""`obsrepo new`: one valid observation, written where docs/design.md §2 says, or a clear refusal."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from . import emit, errors, graph
from .cache import AnalysisCache
from .check import analyze_source
from .errors import InputError, UsageError
from .gitstore import Git
from .model import OBSERVATION_SPEC, format_timestamp, parse_timestamp
from .report import NOT_WRITTEN, Issue
from .rules import analyze, content_hash
from .document import read_document
from .sources import worktree


@dataclass(frozen=True)
class Created:
    id: str
    path: str
    content_hash: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "path": self.path, "content_hash": self.content_hash}


class DocumentRefused(InputError):
    """The observation would be invalid; `issues` says why, with the usual codes. Nothing was
    written, so the issues name no file: their path is "(not written)"."""

    def __init__(self, issues: list[Issue]) -> None:
        issues = [replace(i, path=NOT_WRITTEN) for i in issues]
        first = issues[0]
        super().__init__(f"the observation was not written: {first.message}", code=first.code,
                         issues=[i.as_dict() for i in issues])
        self.issues = issues


def create(root: str, front: dict[str, Any], body: str = "", now: datetime | None = None) -> Created:
    """Validate `front` + `body` exactly as `check` would, then write the file; never overwrite."""
    front = dict(front)
    if front.get("spec", OBSERVATION_SPEC) != OBSERVATION_SPEC:
        raise InputError(f"spec must be {OBSERVATION_SPEC}", parameter="spec")
    if "id" in front:
        raise InputError("`new` generates the id from the content; leave `id` out", parameter="id")
    front.pop("spec", None)
    if front.get("timestamp") is None:
        front["timestamp"] = format_timestamp((now or datetime.now(timezone.utc)).replace(microsecond=0))
    elif isinstance(front["timestamp"], str):
        try:
            front["timestamp"] = format_timestamp(parse_timestamp(front["timestamp"]))
        except ValueError as exc:
            raise InputError(f"timestamp: {exc}", parameter="timestamp") from None
    try:
        draft = emit.document({"spec": OBSERVATION_SPEC, **front}, body)
        read_back = read_document(NOT_WRITTEN, draft.encode("utf-8"))
    except UnicodeEncodeError:
        raise InputError("the input holds text that is not valid Unicode", parameter="body") from None
    if read_back.front is None:
        raise DocumentRefused(read_back.issues)
    digest = content_hash(read_back.front, read_back.body)
    stamp = parse_timestamp(read_back.front["timestamp"]) if isinstance(read_back.front.get("timestamp"), str) else None
    if stamp is None:
        raise InputError("timestamp must be an ISO 8601 string", parameter="timestamp")
    obs_id = f"obs-{stamp:%Y%m%d-%H%M%S}-{digest[:8]}"
    path = f"observations/{stamp:%Y/%m/%d}/{obs_id}.md"
    text = emit.document({"spec": OBSERVATION_SPEC, "id": obs_id, **front}, body).encode("utf-8")

    analysis = analyze(path, text)
    if analysis.issues:
        raise DocumentRefused(analysis.issues)
    git = Git.discover(root)
    cache = AnalysisCache.open(git)
    analyses = analyze_source(worktree(root), cache)
    cache.save()
    if path in analyses:
        raise DocumentRefused([Issue(path, 1, 1, errors.DUPLICATE_CONTENT, "duplicate-content",
                                     f"the same content is already recorded in {path}")])
    analyses[path] = analysis
    problems = [i for i in graph.repository_rules(analyses, added={path}) if i.path == path]
    if problems:
        raise DocumentRefused(problems)

    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    try:
        with open(full, "xb") as handle:
            handle.write(text)
    except FileExistsError:
        raise DocumentRefused([Issue(path, 1, 1, errors.DUPLICATE_CONTENT, "duplicate-content",
                                     f"{path} already exists")]) from None
    return Created(obs_id, path, digest)


def parse_field(text: str) -> tuple[str, Any]:
    """`key=value`: the value is JSON when it parses as JSON (numbers, true, null, [..]),
    otherwise the string as written (`country=NO` stays "NO")."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise UsageError(f"--field expects key=value, got '{text}'", parameter="--field")
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except ValueError:
        value = raw
    return key, value


def parse_json_object(text: str, parameter: str) -> dict[str, Any]:
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise InputError(f"{parameter}: not valid JSON ({exc})", parameter=parameter) from None
    if not isinstance(value, dict):
        raise InputError(f"{parameter}: expected a JSON object", parameter=parameter)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
