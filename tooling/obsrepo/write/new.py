"""`obsrepo new`: one valid observation, written where docs/design.md §2 says, or a clear refusal."""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from .. import errors
from ..errors import InputError, UsageError
from ..files import write_new
from ..format import emit
from ..format.analyze import analyze
from ..format.document import INT64_MAX, INT64_MIN, MAX_DEPTH
from ..format.model import OBSERVATION_SPEC, format_timestamp, parse_timestamp
from ..format.report import NOT_WRITTEN, Issue
from ..format.rules import Analysis
from ..gate.cache import remember_written
from ..gate.near import NearState
from ..gitstore import Git


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


@dataclass(frozen=True)
class Draft:
    """A document ready to be written: its id, path, bytes and per-document analysis."""

    id: str
    path: str
    text: bytes
    content_hash: str
    analysis: Analysis
    event: str


Taken = Callable[[str, str], bool]  # (id, path) → whether a document already holds either


def draft(front: dict[str, Any], body: str = "", now: datetime | None = None, taken: Taken | None = None) -> Draft:
    """Build the document `new` writes from `front` + `body` and apply the per-document rules:
    the id and path come from the UTC timestamp (now when not given) and the content hash.
    Ids are global, but a writer bound to a tenant must not learn of another tenant's
    documents (docs/design.md §8a): when `taken` says a document holds the id `obs-<time>-<hash>`
    or its path, the id is `obs-<time>-<hash>-2` (then -3, …), whoever that document belongs to.
    A document of the same content is not avoided this way: the rules refuse it as a duplicate."""
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
    else:
        raise InputError("timestamp must be an ISO 8601 string", parameter="timestamp")
    stamp = parse_timestamp(front["timestamp"])  # in UTC: the id's time and the folder's date
    name, folder = f"obs-{stamp.year:04d}{stamp:%m%d-%H%M%S}-", f"observations/{stamp.year:04d}/{stamp:%m/%d}"
    # emitted and read once: the id's hash part is the content hash, which leaves the id out, so
    # a placeholder of its length stands in until the document is read, then the id is written in
    placeholder = name + "0" * 8
    try:
        data = emit.document({"spec": OBSERVATION_SPEC, "id": placeholder, **front}, body).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError("the input holds text that is not valid Unicode", parameter="body") from None
    analysis = analyze(f"{folder}/{placeholder}.md", data)
    if analysis.issues or analysis.facts is None:
        raise DocumentRefused(analysis.issues)
    digest = analysis.facts["hash"]
    obs_id, path = _free_name(name + digest[:8], folder, taken)
    data = data.replace(f"\nid: {placeholder}\n".encode(), f"\nid: {obs_id}\n".encode(), 1)
    analysis.facts["id"] = obs_id
    return Draft(obs_id, path, data, digest, analysis, str(front.get("event", "")))


def _free_name(name: str, folder: str, taken: Taken | None) -> tuple[str, str]:
    """The first of `name`, `name-2`, `name-3`, … that no document holds, and its path."""
    obs_id, number = name, 1
    while taken is not None and taken(obs_id, f"{folder}/{obs_id}.md"):
        number += 1
        obs_id = f"{name}-{number}"
    return obs_id, f"{folder}/{obs_id}.md"


def create(git: Git, front: dict[str, Any], body: str = "", now: datetime | None = None,
           binding: dict[str, str] | None = None) -> Created:
    """Validate `front` + `body` exactly as `check` would, then write the file into `git`'s work
    tree, whole or not at all (docs/design.md §8a); never overwrite. A writer bound to a tenant
    is judged on the documents that tenant can see (docs/design.md §8a)."""
    now = now or datetime.now(timezone.utc)
    made = draft(front, body, now)
    tree = NearState.of_worktree(git, binding)  # what differs from a commit, read; the rest asked of its kept lookups
    if tree.taken(made.id, made.path):  # ids are global: keep clear of every tenant's
        made = draft(front, body, now, tree.taken)
    path = made.path
    problems = tree.problems(path, made.analysis.facts or {})
    if problems:
        raise DocumentRefused(problems)

    if not write_new(os.path.join(git.root, path), made.text):
        raise DocumentRefused([Issue(path, 1, 1, errors.DUPLICATE_CONTENT, "duplicate-content",
                                     f"{path} already exists")])
    remember_written(git, path, made.text, made.analysis)  # the next check finds it analysed
    return Created(made.id, path, made.content_hash)


def parse_field(text: str, parameter: str = "field") -> tuple[str, Any]:
    """`key=value`: the value is JSON when it parses as JSON (numbers, true, null, [..]),
    otherwise the string as written (`country=NO` stays "NO"). JSON the front matter cannot
    hold (a non-finite number, a duplicate key, nesting deeper than 32 levels) is refused."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise UsageError(f"{parameter} expects key=value, got '{text}'", parameter=parameter)
    try:
        value = _loads(raw)
    except _Refused as exc:
        label = parameter if parameter != "field" else f"{parameter} {key}"
        raise UsageError(f"{label}: {exc}", parameter=parameter) from None
    except ValueError:
        value = raw
    return key, value


def parse_json_object(text: str, parameter: str) -> dict[str, Any]:
    try:
        value = _loads(text)
    except _Refused as exc:
        raise InputError(f"{parameter}: {exc}", parameter=parameter) from None
    except ValueError as exc:
        raise InputError(f"{parameter}: not valid JSON ({exc})", parameter=parameter) from None
    if not isinstance(value, dict):
        raise InputError(f"{parameter}: expected a JSON object", parameter=parameter)
    return value


def read_json_input(source: str, parameter: str = "json") -> tuple[dict[str, Any], str]:
    """`--json FILE` (`-`: stdin): the front matter, and the body taken out of it."""
    front = parse_json_object(read_text(source, parameter), parameter)
    body = front.pop("body", "") or ""
    if not isinstance(body, str):
        raise InputError("body must be a string", parameter="body")
    return front, body


def read_text(source: str, parameter: str) -> str:
    """The UTF-8 text of FILE, or of stdin for `-`; a file that cannot be read is a usage error."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(source, "rb") as handle:
                data = handle.read()
    except OSError as exc:
        raise UsageError(f"{parameter}: cannot read '{source}': {exc.strerror or exc}", parameter=parameter) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{parameter}: the input is not UTF-8 text", parameter=parameter) from None


class _Refused(Exception):
    """Valid JSON that no front matter can hold."""


def _loads(text: str) -> Any:
    """JSON as the front matter can hold it: finite numbers, 64-bit integers, unique keys,
    nesting within the YAML bound (checked before parsing, so no recursion runs away)."""
    if _too_deep(text):
        raise _Refused(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite, parse_int=_int64,
                          object_pairs_hook=_unique_keys)
    except RecursionError:  # pragma: no cover - _too_deep keeps the parser shallow
        raise _Refused(f"nested deeper than {MAX_DEPTH} levels") from None


_TOKEN = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


def _too_deep(text: str) -> bool:
    """Whether brackets nest deeper than MAX_DEPTH outside strings. Where the text is not JSON the
    parser stops at least as early as this count, so it never nests deeper than counted."""
    depth = 0
    in_string = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token == '"':
            in_string = not in_string
        elif in_string or token[0] == "\\":
            continue
        elif token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        else:
            depth -= 1
    return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is out of the range of a double")
    return value


def _int64(text: str) -> int:
    value = int(text) if len(text) <= 20 else None
    if value is None or not INT64_MIN <= value <= INT64_MAX:
        raise _Refused(f"the integer {text[:40]} does not fit in 64 bits")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _Refused(f"duplicate key '{duplicate}'")
    return value
