"""A tool's input schema, generated from its operation's request (docs/design.md §10).

pydantic writes the request's JSON Schema (`TypeAdapter(Request).json_schema()`) from the
descriptions and bounds the request's fields carry (`ops.fields.Field`), so the tools, the
command line and the web view cannot drift apart. The tool then adapts it to its own surface:
fields get the tool's argument names (seed 002's `scopeIds`, `afterDate`), fields the tool
does not offer are left out, the adapter's own arguments (an answer's `mode`) are added, and
the object is closed (`additionalProperties: false`). An optional field has no `null` branch:
a client that means "none" leaves the argument out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

JsonSchema = dict[str, Any]


def input_schema(request: type, names: Mapping[str, str], extras: Mapping[str, JsonSchema],
                 fixed: Mapping[str, Any]) -> JsonSchema:
    """The closed schema of a tool over `request`: `names` maps each field offered to its
    argument; every required field must be offered or `fixed` by the tool."""
    from pydantic import TypeAdapter

    generated = TypeAdapter(request).json_schema()
    fields, required = generated["properties"], generated.get("required", [])
    unknown = [field for field in [*names, *fixed] if field not in fields]
    unset = [field for field in required if field not in names and field not in fixed]
    if unknown or unset:
        raise TypeError(f"{request.__name__}: no such fields {unknown}; required fields neither offered nor fixed {unset}")
    properties = {name: _plain(fields[field], optional=field not in required) for field, name in names.items()}
    schema: JsonSchema = {"type": "object", "properties": {**properties, **extras}, "additionalProperties": False}
    if offered := [names[field] for field in required if field in names]:
        schema["required"] = offered
    return schema


def _plain(spec: JsonSchema, optional: bool) -> JsonSchema:
    """A generated property as a JSON client reads it best: without pydantic's titles and
    `{}` items (anything), and for an optional field without its `null` branch."""
    spec = _untitled(spec)
    if optional and "anyOf" in spec:
        branches = [branch for branch in spec.pop("anyOf") if branch.get("type") != "null"]
        if "default" in spec and spec["default"] is None:
            del spec["default"]
        spec = {**branches[0], **spec} if len(branches) == 1 else {"anyOf": branches, **spec}
    if "$ref" in json.dumps(spec):
        raise TypeError(f"a tool argument cannot refer to another schema: {spec}")
    return spec


def _untitled(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _untitled(item) for key, item in value.items() if key != "title" and not (key == "items" and item == {})}
    if isinstance(value, list):
        return [_untitled(item) for item in value]
    return value
