"""Parse and validate one document with the strict reader and the pydantic models."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from .. import errors
from ..params import TENANT_KEYS
from .classify import content_classification, most_restrictive
from .document import Document, read_document
from .model import (
    COMPREHENSION_ID,
    COMPREHENSION_SPEC,
    ENTITY_ID,
    OBSERVATION_ID,
    OBSERVATION_SPEC,
    Comprehension,
    Observation,
    Valid,
    format_timestamp,
    keys_at,
    split_extensions,
)
from .report import Issue
from .rules import Analysis, content_hash, kind_of
from .suggest import did_you_mean
from .vocabulary import CLASSIFICATION_RANK, CORRECTION_PRIORITY, DEFAULT_CLASSIFICATION, DEFAULT_PRIORITY

# pydantic's own error types → our stable rule names
_RULES = {
    "missing": "missing-key",
    "extra_forbidden": "unknown-key",
    "literal_error": "invalid-value",
    "string_pattern_mismatch": "invalid-format",
    "string_too_long": "too-long",
    "string_too_short": "empty-value",
    "too_long": "too-long",
    "too_short": "empty-value",
    "greater_than_equal": "out-of-range",
    "less_than_equal": "out-of-range",
}

_OBS_ID_WORDS = "must look like obs-<lowercase letters and digits>, in parts joined by single hyphens " \
                "(obs-20260213-102500-0001)"
# the patterns of the models, said in words (the messages name the field first)
_PATTERN_WORDS = {
    OBSERVATION_ID: _OBS_ID_WORDS,
    COMPREHENSION_ID: "must look like comp-<lowercase letters and digits>, in parts joined by single hyphens "
                      "(comp-acme-pricing)",
    ENTITY_ID: "must be <type>/<key>: a type of lowercase letters, digits and _ that starts with a letter, "
               "a slash, then a key without spaces, control characters or invisible marks that does not start "
               "with a slash (company/acme)",
    r"^[A-Za-z0-9][A-Za-z0-9_.:/@+-]*$": "must start with a letter or digit and hold only letters, digits and "
                                          "_ . : / @ + - (no spaces), e.g. agent/x, plugin:telegram, human/alice",
    r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$": "must start with a letter or digit and hold only letters, digits and "
                                       "_ . : - (no spaces), e.g. task.updated or task:updated",
    r"^[A-Za-z_][A-Za-z0-9_]*$": "is not a field name: field names start with a letter or _ and hold only "
                                 "letters, digits and _",
    r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$": "must start with a letter or digit and hold only letters, digits and "
                                       "_ . : @ - (no spaces)",
}


def analyze(path: str, data: bytes, with_record: bool = False, strict_only: bool = False) -> Analysis:
    """Parse, validate and extract facts; path-dependent rules are applied by `place`.
    `strict_only`: the strict YAML reader alone (tests compare it with the subset reader)."""
    kind = kind_of(path)
    doc = read_document(path, data, strict_only)
    result = Analysis(kind, list(doc.issues))
    if doc.front is None:
        return result
    core, extensions = split_extensions(doc.front)
    spec = core.get("spec")
    if spec == COMPREHENSION_SPEC or (spec != OBSERVATION_SPEC and kind == "comprehension"):
        model_cls: type[Observation] | type[Comprehension] = Comprehension
    else:
        model_cls = Observation
    try:
        model = model_cls.model_validate(core)
    except ValidationError as exc:
        result.issues.extend(_schema_issues(doc, exc, model_cls))
        result.written_id = _written_id(doc, core.get("id"), model_cls)
        return result
    if result.issues:
        result.written_id = _written_id(doc, core.get("id"), model_cls)
        return result
    if isinstance(model, Observation):
        _observation(result, doc, core, model.timestamp, model.valid, extensions, with_record)
    else:
        result.facts = _comprehension_facts(doc, model)
        if with_record:
            result.record = comprehension_record(model, doc.body, extensions)
    return result


def _written_id(doc: Document, value: Any, model_cls: type[Observation] | type[Comprehension]) -> list[Any] | None:
    """[id, line, col] of an invalid document whose id is itself well formed, else None (an id
    that is missing or malformed is its own problem: no file name can be judged against it)."""
    pattern = OBSERVATION_ID if model_cls is Observation else COMPREHENSION_ID
    if not isinstance(value, str) or len(value) > 96 or not re.match(pattern, value) or "\n" in value:
        return None
    mark = doc.locs.get(("id",))
    return [value, *((mark[0] + 2, mark[1] + 1) if mark is not None else (1, 1))]


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # once: json.dumps builds one per call
_FACT_KEYS = ("id", "spec", "entity", "corrects", "retracts", "classification", "event")  # what repository rules point at


def _json(value: Any) -> str | None:
    return None if value is None else _ENCODE(value)


def _ids(value: Any) -> list[str]:
    """`corrects`, `retracts`, `reclassify.targets`: one id or a list of them (validated)."""
    return [value] if isinstance(value, str) else list(value or [])


def _observation(result: Analysis, doc: Document, front: dict[str, Any], timestamp: Any, valid: Valid | None,
                 extensions: dict[str, Any], with_record: bool) -> None:
    """The facts (and record) of a valid observation, read from its front matter: strict validation
    converted nothing there but the timestamp (given) and an id written alone (`_ids`)."""
    body = doc.body.lstrip("\n").rstrip()
    event, source_ref, entity = front["event"], front.get("source_ref"), front.get("entity")
    written_tenant = front.get("tenant") or {}
    tenant = {k: written_tenant[k] for k in TENANT_KEYS if written_tenant.get(k) is not None}
    corrects, retracts = _ids(front.get("corrects")), _ids(front.get("retracts"))
    relations = front.get("relations") or []
    feedback, reclassify = front.get("feedback"), front.get("reclassify")
    targets = _ids(reclassify["targets"]) if reclassify else []
    declared = front.get("classification", DEFAULT_CLASSIFICATION)
    content_class = content_classification(event, body, source_ref)
    digest = content_hash(doc.front, doc.body)  # type: ignore[arg-type]
    locs = doc.locs
    loc: dict[str, Any] = {}
    for key in _FACT_KEYS:
        mark = locs.get((key,))
        if mark is not None:
            loc[key] = (mark[0] + 2, mark[1] + 1)
    if feedback:
        loc["feedback"] = doc.loc(("feedback", "target"))
    loc["reclassify_items"] = _item_locs_at(doc, ("reclassify", "targets"), len(targets))
    loc["corrects_items"] = _item_locs(doc, "corrects", len(corrects))
    loc["retracts_items"] = _item_locs(doc, "retracts", len(retracts))
    loc["relations_items"] = _item_locs(doc, "relations", len(relations))
    result.facts = {
        "kind": "observation", "id": front["id"], "timestamp": format_timestamp(timestamp), "tenant": tenant,
        "entity": entity, "corrects": corrects, "retracts": retracts,
        "relations": [[r["type"], r["target"]] for r in relations], "hash": digest,
        "feedback": feedback["target"] if feedback else None, "reclassify": targets, "declared_class": declared,
        "content_class": content_class, "loc": loc,
    }
    if not with_record:
        return
    priority = front.get("priority")
    result.record = {  # one observation as the index stores it: plain values, JSON text for nested data
        "id": front["id"],
        "timestamp": timestamp,
        "source": front["source"],
        "event": event,
        "type": front.get("type"),
        "body": body,
        "scope": list(front.get("scope") or []),
        "entity": entity,
        "entity_type": entity.split("/", 1)[0] if entity else None,
        "fields": _json(front.get("fields")),
        "priority": priority if priority is not None else CORRECTION_PRIORITY if corrects else DEFAULT_PRIORITY,
        "specificity": float(front.get("specificity") or 0.0),
        "corrects": list(corrects),
        "retracts": list(retracts),
        "relations": [{"type": r["type"], "target": r["target"]} for r in relations],
        # the period, in UTC like `timestamp` (docs/design.md §19)
        "valid_from": valid.start if valid is not None else None,
        "valid_until": valid.until if valid is not None else None,
        "tenant_org": tenant.get("org"),
        "tenant_project": tenant.get("project"),
        "tenant_agent": tenant.get("agent"),
        "tenant_user": tenant.get("user"),
        # the ladder: the declared value raised by the content rules (reclassify documents are
        # folded in when the index is read, docs/design.md §14)
        "classification": most_restrictive(declared, content_class),
        "declared_classification": declared,
        "feedback_target": feedback["target"] if feedback else None,
        "feedback_outcome": feedback["outcome"] if feedback else None,
        "feedback_session": feedback.get("session") if feedback else None,
        "reclassify_targets": list(targets),
        "reclassify_rank": CLASSIFICATION_RANK[reclassify["classification"]] if reclassify else None,
        "source_ref": source_ref,
        "interpretation": front.get("interpretation"),
        "data": _json(front.get("data")),
        "context": _json(front.get("context")),
        "trace_ref": front.get("trace_ref"),
        "extensions": _json(extensions or None),
        "content_hash": digest,
    }


def comprehension_record(comp: Comprehension, body: str, extensions: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": comp.id,
        "topic": comp.topic,
        "domain": comp.domain,
        "created": comp.created,
        "updated": comp.updated,
        "version": comp.version,
        "verified": comp.verified,
        "prior": _json(comp.prior.model_dump()),
        "posterior": _json(comp.posterior.model_dump()),
        "observations": list(comp.observations),
        "observations_used": list(comp.posterior.observations_used),
        "body": body.lstrip("\n").rstrip(),
        "extensions": _json(extensions or None),
    }


# where a whole-document check points: the key it is about
_RULE_KEYS = {
    "fields-need-entity": ("fields",),
    "relations-need-entity": ("relations",),
    "deleted-flag": ("fields", "_deleted"),
    "reserved-field": ("fields",),
    "correction-priority": ("priority",),
    "valid-on-merge": ("valid",),
    "comprehension-dates": ("updated",),
    "observations-used-subset": ("posterior", "observations_used"),
}


def _schema_issues(doc: Document, exc: ValidationError, model_cls: type[Observation] | type[Comprehension]) -> list[Issue]:
    issues = []
    for err in exc.errors(include_url=False):
        kind = err["type"]
        rule = _RULES.get(kind) or (kind if "-" in kind else "wrong-type" if kind.endswith("_type") else "invalid-value")
        loc = tuple(err["loc"])
        where = ".".join(str(p) for p in loc if p != "[key]") or "front matter"
        if not loc and (err.get("ctx") or {}).get("key") is not None:
            loc = _RULE_KEYS.get(rule, ()) + (err["ctx"]["key"],)
        if kind == "extra_forbidden" and not str(loc[-1]).strip():
            message = "an empty key is not allowed"
        elif kind == "extra_forbidden":
            near = did_you_mean(str(loc[-1]), keys_at(model_cls, loc[:-1]))
            message = f"unknown key '{where}'{near} (extensions must start with 'x-')"
        elif kind == "missing":
            message = f"required key '{where}' is missing"
        elif kind in ("string_too_long", "too_long") and isinstance(err.get("input"), str):
            message = f"{where}: longer than {err['ctx']['max_length']} characters"
        elif kind == "string_pattern_mismatch":
            pattern = (err.get("ctx") or {}).get("pattern", "")
            words = _PATTERN_WORDS.get(pattern, f"does not have the required form ({pattern})")
            message = f"{where} {words}" if loc else words
        elif loc:
            message = f"{where}: {err['msg']}"
        else:
            message = err["msg"]
        code = errors.VALIDATION_ERROR
        if len(loc) == 3 and loc[0] == "relations" and loc[2] == "type" and kind != "missing":
            code, rule = errors.INVALID_RELATIONSHIP_TYPE, "relation-type"
            message = f"{where}: relation types are UPPER_SNAKE_CASE (PART_OF, DEPENDS_ON, … or your own)"
        line, col = doc.loc(loc or _RULE_KEYS.get(rule, ()))
        issues.append(Issue(doc.path, line, col, code, rule, message))
    return issues


def _locs(doc: Document, *keys: str) -> dict[str, Any]:
    """Positions of the keys the repository rules may point at."""
    return {key: doc.loc((key,)) for key in keys if (key,) in doc.locs}


def _item_locs(doc: Document, key: str, count: int) -> list:
    """Each list item's position; a single value written without a list points at its key."""
    return [doc.loc((key, i)) for i in range(count)]


def _item_locs_at(doc: Document, key: tuple, count: int) -> list:
    return [doc.loc((*key, i)) for i in range(count)]


def _comprehension_facts(doc: Document, comp: Comprehension) -> dict[str, Any]:
    return {
        "kind": "comprehension",
        "id": comp.id,
        "version": comp.version,
        "observations": list(comp.observations),
        "loc": {
            **_locs(doc, "id", "spec", "version", "observations"),
            "observations_items": _item_locs(doc, "observations", len(comp.observations)),
        },
    }
