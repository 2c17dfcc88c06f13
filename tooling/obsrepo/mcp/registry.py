"""Tools: a name, a description (the function's docstring), a JSON Schema, annotations, and the
function that answers. A tool module declares its tools with `@read_tool(...)` (or, for tools
that add documents, `@write_tool(...)`); `tools/__init__.py` finds every module of the folder,
so adding a tool is adding one module.

Arguments are checked against the schema before the function runs: unknown names (a `tenant`
or a `branch` among them: those come from the server's configuration only), wrong types and values
out of bounds are refused as VALIDATION_ERROR naming the argument. Strings must be Unicode
text without NUL, numbers finite; objects and arrays nest at most MAX_NESTING levels.

Every property of every schema has exactly one JSON `type`, or an `anyOf` of schemas that each
have one (docs/design.md §8a): generic clients (the MCP Inspector, function-calling dialects
with a single `type`) convert what a person types into the right JSON only when told which.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..errors import UsageError
from ..params import MAX_LIMIT
from ..times import MAX_MS, MIN_MS, format_timestamp, parse_time

MAX_OFFSET = 1_000_000_000
MAX_TEXT = 4096  # any short string argument (ids, names, revisions, search text)
MAX_NESTING = 32  # arrays and objects inside an argument (a document's own bound)

# -- schema pieces shared by the tools ---------------------------------------------------------
ENTITY_ID = {"type": "string", "minLength": 1, "maxLength": 512, "description": "An entity id: type/key, e.g. company/acme."}
AT = {"type": "string", "minLength": 1, "maxLength": 256,
      "description": "A git revision (commit, branch, tag, HEAD~3): answer as the repository was there. Default: the tip served."}
ENTITY_TYPE = {"type": "string", "minLength": 1, "maxLength": 128, "description": "Only entities of this type (the part before the slash)."}
OFFSET = {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET, "default": 0, "description": "Skip this many first (the next page)."}
DIRECTION = {"type": "string", "enum": ["both", "out", "in", "outbound", "inbound"], "default": "both",
             "description": "out (outbound): the entity's own relations; in (inbound): those pointing at it; both."}
RELATIONSHIP_TYPES = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 128}, "maxItems": 64,
                      "uniqueItems": True, "description": "Only these relationship types (PART_OF, DEPENDS_ON, REFERS_TO, …)."}


MOMENT_FORMS = "ISO 8601 (a date, or a timestamp with a timezone) or unix milliseconds (a number, or digits as text)."


def moment(description: str) -> dict[str, Any]:
    """A date argument: ISO 8601 text, or unix milliseconds as an integer (or as all-digit text,
    which `times.parse_time` reads as milliseconds too)."""
    return {"anyOf": [{"type": "string", "minLength": 1, "maxLength": 64},
                      {"type": "integer", "minimum": MIN_MS, "maximum": MAX_MS}],
            "description": f"{description}: {MOMENT_FORMS}"}


def instant(value: str | int | None, name: str) -> datetime | None:
    """A date argument read by the one time parser, a bad one named as the tool's argument."""
    return None if value is None else parse_time(value, name)


def instant_text(value: str | int | None, name: str) -> str | None:
    """A date argument as canonical ISO 8601 UTC text, for the library calls that take text."""
    moment = instant(value, name)
    return None if moment is None else format_timestamp(moment)


def limit(default: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": default,
            "description": f"At most this many (1..{MAX_LIMIT})."}


def text(description: str, max_length: int = MAX_TEXT) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length, "description": description}


CONFIGURED = {  # what only the server's configuration sets, never an argument
    "tenant": "the tenant binding comes from the server's configuration (--tenant, OBSREPO_TENANT), never from an argument",
    "branch": "the proposal branch comes from the server's configuration (obsrepo mcp --branch), never from an argument",
}
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
ADDS_ONLY = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}


class Text(str):
    """An answer given as text only (observation_query in its short and full modes)."""


@dataclass
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    function: Callable[..., Any]
    _validator: Any = field(default=None, repr=False)

    def arguments(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments checked against the schema, defaults filled in; UsageError otherwise."""
        given = dict(given or {})
        known = self.input_schema["properties"]
        for name in sorted(given):
            if name not in known:
                why = CONFIGURED.get(name, f"{self.name} takes {', '.join(known) or 'no arguments'}")
                raise UsageError(f"unknown argument '{_short(name)}': {why}", parameter=_short(name))
        _refuse_unusable(given, "")
        if self._validator is None:
            from jsonschema import Draft202012Validator

            self._validator = Draft202012Validator(self.input_schema)
        failures = sorted(self._validator.iter_errors(given), key=lambda e: (list(e.absolute_path), e.validator))
        if failures:
            failure = failures[0]
            where = ".".join(str(part) for part in failure.absolute_path) or (
                failure.message.split("'")[1] if failure.validator == "required" else "arguments")
            raise UsageError(f"argument '{where}': {_describe(failure)}", parameter=where)
        for name, spec in known.items():
            if name not in given and "default" in spec:
                given[name] = spec["default"]
            elif isinstance(given.get(name), float) and "integer" in _types(spec) and "number" not in _types(spec):
                given[name] = int(given[name])  # 20.0 is the integer 20 in JSON Schema
        return given


def _short(text: str, size: int = 80) -> str:
    return text if len(text) <= size else text[:size] + "…"


def _types(spec: Mapping[str, Any]) -> set[str]:
    """The JSON types a property's schema admits: its `type`, or those of its `anyOf` branches."""
    if "anyOf" in spec:
        return {branch["type"] for branch in spec["anyOf"]}
    return {spec["type"]} if "type" in spec else set()


def _describe(failure: Any) -> str:
    """jsonschema's message without echoing a long value back."""
    kind = failure.validator
    value = failure.instance
    if kind == "anyOf":  # the branch of the value's own type says what is wrong, else the types
        near = [f for f in failure.context if f.validator != "type"]
        if near:
            return _describe(near[0])
        wanted = [branch["type"] for branch in failure.validator_value]
        return f"expected {' or '.join(wanted)}, got {_json_type(value)}"
    if kind == "type":
        wanted = failure.validator_value
        return f"expected {wanted if isinstance(wanted, str) else ' or '.join(wanted)}, got {_json_type(value)}"
    if kind in ("minimum", "maximum"):
        return f"{_short(repr(value))} is out of range ({failure.schema.get('minimum')}..{failure.schema.get('maximum')})"
    if kind == "enum":
        return f"{_short(repr(value))} is not one of {', '.join(map(str, failure.validator_value))}"
    if kind in ("maxLength", "minLength"):
        return f"length must be {failure.schema.get('minLength', 0)}..{failure.schema.get('maxLength', '')} characters"
    return _short(failure.message, 200)


def _json_type(value: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def bounded_json(value: Any, name: str, size: int) -> None:
    """Refuse an argument (an object or any JSON value) longer than `size` characters as JSON."""
    if len(json.dumps(value, ensure_ascii=False)) > size:
        raise UsageError(f"argument '{name}' is too large: at most {size} characters as JSON", parameter=name)


def _refuse_unusable(value: Any, where: str, depth: int = 0) -> None:
    """Strings must be Unicode text without NUL, numbers finite (a client may send NaN, which
    JSON has not), and nothing may nest deeper than MAX_NESTING (checked before anything
    recursive reads the value)."""
    if isinstance(value, (dict, list)) and depth > MAX_NESTING:
        top = where.split(".")[0]
        raise UsageError(f"argument '{top}' is nested deeper than {MAX_NESTING} levels", parameter=top)
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"argument '{where}' is not valid Unicode text", parameter=where) from None
        if "\0" in value:
            raise UsageError(f"argument '{where}' holds a NUL character", parameter=where)
    elif isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"argument '{where}': {value} is not a finite number", parameter=where)
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_unusable(key, where)
            _refuse_unusable(item, f"{where}.{key}" if where else str(key), depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_unusable(item, f"{where}.{index}", depth + 1)


def _schema(properties: dict[str, dict[str, Any]], required: tuple[str, ...]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


def _declare(annotations: dict[str, Any], title: str, properties: dict[str, dict[str, Any]],
             required: tuple[str, ...]) -> Callable[[Callable[..., Any]], Tool]:
    def declare(function: Callable[..., Any]) -> Tool:
        description = inspect.cleandoc(function.__doc__ or "")
        return Tool(function.__name__, title, description, _schema(properties, required),
                    dict(annotations, title=title), function)

    return declare


def read_tool(title: str, properties: dict[str, dict[str, Any]], required: tuple[str, ...] = ()) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a tool that only reads: `function(repo, **arguments)` returns JSON-ready data
    (structured content + the same JSON as text) or a `Text`."""
    return _declare(READ_ONLY, title, properties, required)


def write_tool(title: str, properties: dict[str, dict[str, Any]], required: tuple[str, ...] = ()) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a tool that adds documents (never changes or removes one)."""
    return _declare(ADDS_ONLY, title, properties, required)
