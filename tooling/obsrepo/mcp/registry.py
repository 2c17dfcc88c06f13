"""Tools: a name, a description (the function's docstring), an input schema generated from the
operation's request (schema.py), annotations, and the function that answers. A tool module
declares its tools with `@read_tool(Request, …)` (or, for tools that add documents,
`@write_tool(…)`) and its table of arguments: the request field each argument fills, under
the tool's name for it (seed 002's `scopeIds` for `scopes`); `tools/__init__.py` finds every
module of the folder, so adding a tool is adding one module.

Arguments are checked against the schema before the request is built: unknown names (a
`tenant` or a `branch` among them: those come from the server's configuration only), wrong
types and values out of bounds are refused as VALIDATION_ERROR naming the argument. Strings
must be Unicode text without NUL, numbers finite; objects and arrays nest at most MAX_NESTING
levels. An error of the operation names a request field; the tool renames it to its argument.

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
from typing import Any

from ..errors import ObsrepoError, UsageError
from ..ops import Session
from .schema import JsonSchema, input_schema

MAX_NESTING = 32  # arrays and objects inside an argument (a document's own bound)

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
    annotations: dict[str, Any]
    function: Callable[..., Any]  # function(session, request, **extras)
    request: type  # the operation's request
    names: Mapping[str, str]  # request field → the tool's argument; fields not named are not offered
    extras: Mapping[str, JsonSchema] = field(default_factory=dict)  # the tool's own arguments (an answer's mode)
    fixed: Mapping[str, Any] = field(default_factory=dict)  # request fields the tool sets itself
    answers: bool = False  # the tool answers with its operation's JSON as it is (its `outputSchema`)
    _schema: JsonSchema | None = field(default=None, repr=False)
    _validator: Any = field(default=None, repr=False)

    @property
    def input_schema(self) -> JsonSchema:
        if self._schema is None:
            self._schema = input_schema(self.request, self.names, self.extras, self.fixed)
        return self._schema

    @property
    def output_schema(self) -> JsonSchema | None:
        """The JSON Schema of the answer, from the operation's typed shape (ops/shapes.py), for a
        tool that answers with its operation's JSON; None otherwise."""
        from ..ops import OPERATIONS
        from ..ops.shapes import SHAPES, output_schema

        name = next((op.name for op in OPERATIONS.values() if op.request is self.request), None)
        return output_schema(SHAPES[name]) if self.answers and name in SHAPES else None

    def call(self, session: Session, given: Mapping[str, Any] | None) -> Any:
        """Check the arguments, build the request, answer; an error names the tool's argument."""
        arguments = self.arguments(given)
        extras = {name: arguments.pop(name) for name in self.extras if name in arguments}
        properties = self.input_schema["properties"]
        values = {field: tuple(arguments[name]) if properties[name].get("type") == "array" else arguments[name]
                  for field, name in self.names.items() if name in arguments}
        try:
            return self.function(session, self.request(**values, **self.fixed), **extras)
        except ObsrepoError as exc:
            exc.renamed(self.names)
            raise

    def arguments(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments checked against the schema; UsageError otherwise."""
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
            if isinstance(given.get(name), float) and "integer" in _types(spec) and "number" not in _types(spec):
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


Arguments = Mapping[str, str]


def _declare(annotations: dict[str, Any], request: type, title: str, names: Arguments,
             extras: Mapping[str, JsonSchema] | None, fixed: Mapping[str, Any] | None,
             answers: bool = False) -> Callable[[Callable[..., Any]], Tool]:
    def declare(function: Callable[..., Any]) -> Tool:
        description = inspect.cleandoc(function.__doc__ or "")
        return Tool(function.__name__, title, description, dict(annotations, title=title), function, request, names,
                    dict(extras or {}), dict(fixed or {}), answers)

    return declare


def read_tool(request: type, title: str, names: Arguments, extras: Mapping[str, JsonSchema] | None = None,
              fixed: Mapping[str, Any] | None = None, answers: bool = True) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a tool that only reads: `function(session, request, **extras)` returns
    JSON-ready data (structured content + the same JSON as text) or a `Text`. A tool that
    answers with its operation's JSON as it is (`answers`, the default) declares the
    operation's typed shape as its `outputSchema`; one that may answer otherwise (a `Text`
    mode) says `answers=False`."""
    return _declare(READ_ONLY, request, title, names, extras, fixed, answers)


def write_tool(request: type, title: str, names: Arguments, extras: Mapping[str, JsonSchema] | None = None,
               fixed: Mapping[str, Any] | None = None) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a tool that adds documents (never changes or removes one)."""
    return _declare(ADDS_ONLY, request, title, names, extras, fixed)
