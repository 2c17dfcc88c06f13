"""Pydantic models of observation/v1 and comprehension/v1 (docs/design.md §2–3, §8).

Models are strict: values are never coerced (`"100"` is not a priority, `1700000000` is not
a timestamp), unknown keys are refused except `x-` extensions, which the reader sets aside
before validation. Custom checks raise errors whose type is the stable `rule` name that
`obsrepo check` reports.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .. import times
from ..times import (
    DATE_PATTERN,
    TIMESTAMP_PATTERN,
    format_timestamp,  # noqa: F401 - re-exported for the readers' convenience
)
from .vocabulary import (
    CLASSIFICATIONS,
    COMPREHENSION_ID,
    CORRECTION_PRIORITY,
    DEFAULT_CLASSIFICATION,
    DEFAULT_PRIORITY,
    FEEDBACK_OUTCOMES,
)

OBSERVATION_SPEC = "observation/v1"
COMPREHENSION_SPEC = "comprehension/v1"

OBSERVATION_ID = r"^obs-[a-z0-9]+(-[a-z0-9]+)*$"
# a key holds no white space, no control character (C0, DEL, C1: a terminal would obey it) and no
# invisible or direction-changing mark (zero-width, bidi controls, BOM): what prints is what it is
_UNSEEN = r"\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
ENTITY_ID = rf"^[a-z][a-z0-9_]*/[^\s/{_UNSEEN}][^\s{_UNSEEN}]*$"
RELATION_TYPE = r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$"
KNOWN_RELATIONS = ("PART_OF", "CORRECTS", "REFERS_TO", "SETTLES", "DUPLICATE_OF", "DEPENDS_ON", "SUPERSEDES",
                   "DISTINCT_FROM")

_OBS_ID = re.compile(OBSERVATION_ID)
_ENTITY = re.compile(ENTITY_ID)
_REL = re.compile(RELATION_TYPE)


# JSON Schema keywords for what the validators below check, for the schemas generated from these
# models (`python -m obsrepo.format.schemas`). A pattern that must hold up to the end of a string is
# written as "no match of the forbidden characters" (`not`/`pattern`): Python's `$` also matches
# before a final newline, ECMA 262's does not, and the schemas must mean the same in both.
LINE_BREAKS = "\n\x0b\x0c\r\x1c\x1d\x1e\x85\u2028\u2029"
_BREAKS = "".join(f"\\u{ord(c):04x}" for c in LINE_BREAKS)  # the same characters, as JSON Schema escapes
ONE_LINE_SCHEMA: dict[str, Any] = {
    "description": "One line (no LF, CR, VT, FF, U+001C..U+001E, NEL, U+2028 or U+2029) and not blank.",
    "pattern": "\\S",
    "not": {"pattern": f"[{_BREAKS}]"},
}
TEXT_SCHEMA: dict[str, Any] = {"minLength": 1, "not": {"anyOf": [{"pattern": "[\\n\\r\\t]"}, {"pattern": "^\\s|\\s$"}]}}
NO_NUL_SCHEMA: dict[str, Any] = {  # every value, however deep: no NUL character
    "pattern": "^[^\\u0000]*$",
    "propertyNames": {"pattern": "^[^\\u0000]*$"},
    "items": {"$ref": "#/$defs/no-nul"},
    "additionalProperties": {"$ref": "#/$defs/no-nul"},
}
_HAS_ENTITY = {"required": ["entity"], "properties": {"entity": {"type": "string"}}}
OBSERVATION_SCHEMA_RULES: dict[str, Any] = {
    "allOf": [
        {"if": {"required": ["fields"], "properties": {"fields": {"type": "object"}}}, "then": _HAS_ENTITY},
        {"if": {"required": ["relations"], "properties": {"relations": {"type": "array", "minItems": 1}}},
         "then": _HAS_ENTITY},
        {"if": {"required": ["corrects"], "properties": {"corrects": {"type": ["string", "array"]}}},
         "then": {"properties": {"priority": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 1000}]}}}},
        # valid-on-merge: a merge has no period
        {"not": {"required": ["valid", "relations"],
                 "properties": {"valid": {"type": "object"}, "relations": {"type": "array", "contains": {
                     "type": "object", "required": ["type"], "properties": {"type": {"const": "DUPLICATE_OF"}}}}}}},
    ]
}
FIELDS_SCHEMA: dict[str, Any] = {
    "propertyNames": {"pattern": "^([A-Za-z][A-Za-z0-9_]*|_deleted)$", "maxLength": 128},
    "properties": {"_deleted": {"type": "boolean"}},
}


def _fail(rule: str, message: str, **ctx: Any) -> PydanticCustomError:
    return PydanticCustomError(rule, message, ctx or None)


def parse_timestamp(value: Any) -> datetime:
    """ISO 8601 with seconds and a timezone (`Z` or `±HH:MM`), returned in UTC, within years
    0001..9999 in UTC."""
    try:
        return times.parse_timestamp(value)
    except times.TimeError as exc:
        raise _fail(exc.rule, exc.message) from None


def parse_date_or_timestamp(value: Any) -> datetime:
    try:
        return times.parse_date_or_timestamp(value)
    except times.TimeError as exc:
        raise _fail(exc.rule, exc.message) from None


# every character some reader takes for a line break: LF, VT, FF, CR, FS, GS, RS, NEL, LS, PS
# (what `str.splitlines` splits on), whether written as is or as a YAML escape
_LINE_BREAK = re.compile(f"[{LINE_BREAKS}]")


def _one_line(value: str) -> str:
    if _LINE_BREAK.search(value):
        raise _fail("event-one-line", "event must be one line; put details in the body")
    if not value.strip():
        raise _fail("empty-value", "must not be empty")
    return value


def _no_blank(value: str) -> str:
    if not value or value != value.strip() or "\t" in value or _LINE_BREAK.search(value):
        raise _fail("invalid-format", "must be non-empty, without surrounding white space or line breaks")
    return value


def _id_list(value: Any) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise _fail("wrong-type", "must be an observation id or a non-empty list of them")
    for item in items:
        if not isinstance(item, str) or not _OBS_ID.fullmatch(item):
            raise _fail("invalid-format", "'{item}' is not an observation id: ids look like obs-<lowercase letters "
                        "and digits>, in parts joined by single hyphens (obs-20260213-102500-0001)", item=str(item)[:100])
    if len(set(items)) != len(items):
        raise _fail("duplicate-value", "the same id is listed twice")
    return list(items)


def _unique_strings(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise _fail("duplicate-value", "the same value is listed twice")
    return value


Timestamp = Annotated[
    datetime,
    BeforeValidator(parse_timestamp),
    WithJsonSchema({"type": "string", "format": "date-time", "pattern": f"^{TIMESTAMP_PATTERN}$"}),
]
DateOrTimestamp = Annotated[
    datetime,
    BeforeValidator(parse_date_or_timestamp),
    WithJsonSchema({"type": "string", "anyOf": [{"format": "date-time", "pattern": f"^{TIMESTAMP_PATTERN}$"},
                                                {"format": "date", "pattern": f"^{DATE_PATTERN}$"}]}),
]
Text = Annotated[str, AfterValidator(_no_blank), Field(max_length=1000, json_schema_extra=TEXT_SCHEMA)]
EntityId = Annotated[str, Field(pattern=ENTITY_ID, max_length=256)]
IdList = Annotated[
    list[str],
    BeforeValidator(_id_list),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": OBSERVATION_ID},
                {"type": "array", "items": {"type": "string", "pattern": OBSERVATION_ID}, "minItems": 1, "uniqueItems": True},
            ]
        }
    ),
]
Json = None | bool | int | float | str | list[Any] | dict[str, Any]
TenantValue = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$", max_length=128)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class Tenant(_Strict):
    """The ownership boundary; a binding matches when every bound key is equal."""

    org: TenantValue | None = None
    project: TenantValue | None = None
    agent: TenantValue | None = None
    user: TenantValue | None = None

    def as_mapping(self) -> dict[str, str]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Relation(_Strict):
    type: Annotated[str, Field(pattern=RELATION_TYPE, max_length=64)]
    target: EntityId


Classification = Literal["public", "internal", "confidential", "restricted"]
assert get_args(Classification) == CLASSIFICATIONS  # the ladder is defined once, in vocabulary
Outcome = Literal["accepted", "rejected", "rework", "misleading"]
assert get_args(Outcome) == FEEDBACK_OUTCOMES


class Feedback(_Strict):
    """How useful the target observation was in a session (docs/design.md §14)."""

    target: Annotated[str, Field(pattern=OBSERVATION_ID, max_length=96)]
    outcome: Outcome
    session: Text | None = None


class Reclassify(_Strict):
    """Raise the classification of earlier observations (never lowers it)."""

    targets: IdList
    classification: Classification


class Valid(_Strict):
    """The period of valid time an observation's facts hold (docs/design.md §19): `[from, until)`,
    either end or both; a missing `from` is the observation's `timestamp`, a missing `until` open."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=False,
                              json_schema_extra={"minProperties": 1})

    # a written null is not an absent end: the timestamp reader refuses it
    start: Timestamp = Field(default=None, alias="from")  # type: ignore[assignment]
    until: Timestamp = None  # type: ignore[assignment]

    @model_validator(mode="after")
    def _shape(self) -> Valid:
        if self.start is None and self.until is None:
            raise _fail("empty-value", "`valid` needs `from`, `until` or both")
        if self.start is not None and self.until is not None and self.until <= self.start:
            raise _fail("valid-range", "`valid.until` must be after `valid.from`")
        return self


class Observation(_Strict):
    """observation/v1: one immutable, timestamped statement of what was observed."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, title="observation/v1",
                              json_schema_extra=OBSERVATION_SCHEMA_RULES)

    spec: Literal["observation/v1"]
    id: Annotated[str, Field(pattern=OBSERVATION_ID, max_length=96)]
    timestamp: Timestamp
    source: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:/@+-]*$", max_length=200)]
    event: Annotated[str, AfterValidator(_one_line), Field(min_length=1, max_length=2000, json_schema_extra=ONE_LINE_SCHEMA)]
    type: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$", max_length=128)] | None = None
    scope: Annotated[list[Text], AfterValidator(_unique_strings),
                     Field(max_length=256, json_schema_extra={"uniqueItems": True})] | None = None
    entity: EntityId | None = None
    fields: Annotated[dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128)], Json],
                      Field(json_schema_extra=FIELDS_SCHEMA)] | None = None
    priority: Annotated[int, Field(ge=0, le=1_000_000)] | None = None
    specificity: Annotated[float, Field(ge=0, le=1)] | None = None
    corrects: IdList | None = None
    retracts: IdList | None = None
    relations: Annotated[list[Relation], Field(max_length=256)] | None = None
    valid: Valid | None = None
    tenant: Tenant | None = None
    classification: Classification = DEFAULT_CLASSIFICATION
    source_ref: Text | None = None
    interpretation: Text | None = None
    data: Json = None
    context: dict[str, Any] | None = None
    trace_ref: Text | None = None
    feedback: Feedback | None = None
    reclassify: Reclassify | None = None

    @model_validator(mode="after")
    def _shape(self) -> Observation:
        if self.fields is not None and self.entity is None:
            raise _fail("fields-need-entity", "`fields` describe an entity: add `entity: <type>/<key>`")
        if self.relations and self.entity is None:
            raise _fail("relations-need-entity", "relations go from `entity` to a target: add `entity`")
        if self.fields:
            for name, value in self.fields.items():
                if name == "_deleted":
                    if not isinstance(value, bool):
                        raise _fail("deleted-flag", "`_deleted` must be true or false")
                elif name.startswith("_"):
                    raise _fail("reserved-field", "field '{key}': names starting with '_' are reserved (only `_deleted` exists)",
                                key=name)
        if self.valid is not None and any(r.type in ("DUPLICATE_OF", "DISTINCT_FROM") for r in self.relations or ()):
            raise _fail("valid-on-merge", "a merge (`DUPLICATE_OF`) or a declaration of distinctness (`DISTINCT_FROM`) "
                        "has no period: identity is not valid for a while; drop `valid` or write the relation apart")
        if self.corrects is not None and self.priority is not None and self.priority < CORRECTION_PRIORITY:
            raise _fail("correction-priority", "a correction (`corrects`) has priority ≥ 1000 (1000 when omitted)")
        return self

    @property
    def effective_priority(self) -> int:
        if self.priority is not None:
            return self.priority
        return CORRECTION_PRIORITY if self.corrects else DEFAULT_PRIORITY

    @property
    def tenant_mapping(self) -> dict[str, str]:
        return self.tenant.as_mapping() if self.tenant else {}


Confidence = Literal["high", "medium", "low", "unknown"]


class Prior(_Strict):
    statement: Annotated[str, Field(min_length=1)]
    confidence: Confidence
    source: Annotated[str, Field(min_length=1)]


class Posterior(_Strict):
    statement: Annotated[str, Field(min_length=1)]
    confidence: Confidence
    update_reasoning: Annotated[str, Field(min_length=1)]
    observations_used: Annotated[list[Annotated[str, Field(pattern=OBSERVATION_ID)]], AfterValidator(_unique_strings),
                                 Field(json_schema_extra={"uniqueItems": True})]


class Comprehension(_Strict):
    """comprehension/v1: a belief that cites the observations behind it."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, title="comprehension/v1")

    spec: Literal["comprehension/v1"]
    id: Annotated[str, Field(pattern=COMPREHENSION_ID, max_length=96)]
    topic: Annotated[str, AfterValidator(_one_line), Field(min_length=1, max_length=500, json_schema_extra=ONE_LINE_SCHEMA)]
    domain: Annotated[str, Field(min_length=1, max_length=200)]
    created: DateOrTimestamp
    updated: DateOrTimestamp
    version: Annotated[int, Field(ge=1)] = 1
    verified: bool = False
    prior: Prior
    observations: Annotated[
        list[Annotated[str, Field(pattern=OBSERVATION_ID)]], AfterValidator(_unique_strings),
        Field(min_length=1, json_schema_extra={"uniqueItems": True})
    ]
    posterior: Posterior

    @model_validator(mode="after")
    def _shape(self) -> Comprehension:
        if self.updated < self.created:
            raise _fail("comprehension-dates", "`updated` is earlier than `created`")
        missing = [o for o in self.posterior.observations_used if o not in self.observations]
        if missing:
            raise _fail(
                "observations-used-subset",
                "posterior.observations_used cites {ids} which are not in `observations`",
                ids=", ".join(missing),
            )
        return self


def split_extensions(front: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`x-` keys are extensions: kept, never validated."""
    for key in front:
        if key.startswith("x-"):
            break
    else:
        return front, {}
    core = {k: v for k, v in front.items() if not k.startswith("x-")}
    return core, {k: v for k, v in front.items() if k.startswith("x-")}


def keys_at(model: type[BaseModel], path: tuple) -> tuple[str, ...]:
    """The keys the mapping at `path` inside `model` may hold, list indexes stepped over (an
    unknown key's neighbours, for a did-you-mean); () where the mapping is free (`fields`, `data`)."""
    for step in path:
        if isinstance(step, int):
            continue
        field = model.model_fields.get(step)
        inner = _model_in(field.annotation) if field is not None else None
        if inner is None:
            return ()
        model = inner
    return tuple(spec.alias or name for name, spec in model.model_fields.items())


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field's type holds (`Tenant | None`, `list[Relation]`), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((found for arg in get_args(annotation) if (found := _model_in(arg)) is not None), None)


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["patternProperties"] = {"^x-": {}}
    schema.setdefault("$defs", {})["no-nul"] = NO_NUL_SCHEMA
    schema["allOf"] = [*schema.get("allOf", []), {"$ref": "#/$defs/no-nul"}]
    return _at_the_very_end(schema)


def _at_the_very_end(node: Any) -> Any:
    """A pattern's final `$` is the end of the string in ECMA 262, but Python's `re` also lets it
    match before a final newline (`obs-1\\n`): `$(?!\\n)` means the end of the string in both."""
    if isinstance(node, dict):
        return {k: (v + "(?!\\n)" if k == "pattern" and isinstance(v, str) and v.endswith("$") else _at_the_very_end(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_at_the_very_end(v) for v in node]
    return node
