"""entity-schema/v1 files (`schemas/entities/<type>.yaml`): per-field reducer policies and the
date fields that become timeline events (docs/design.md §4). Read with the same strict YAML policy."""

from __future__ import annotations

import posixpath
import re
from typing import Any

from .report import Issue
from .schema_file import SchemaFile
from .vocabulary import POLICIES

_EVENT_TYPE = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def read_entity_schema(path: str, data: bytes) -> tuple[dict[str, Any] | None, list[Issue]]:
    """Parse and check one entity schema; (schema or None, issues)."""
    file = SchemaFile(path, data, "entity-schema")
    front, issues, bad = file.front, file.issues, file.bad
    if front is None:
        return None, issues
    file.unknown_keys(front, ("spec", "type", "fields", "temporal_fields", "identity"))
    if front.get("spec") != "entity-schema/v1":
        bad(("spec",), "spec must be entity-schema/v1")
    expected = posixpath.basename(path).rsplit(".", 1)[0]
    if front.get("type") != expected:
        bad(("type",), f"type must be '{expected}' (the file name)")
    fields = front.get("fields", {})
    if not isinstance(fields, dict):
        bad(("fields",), "fields must be a mapping of field name to {policy: …}")
        fields = {}
    for name, spec in fields.items():
        if not _FIELD.match(name):
            bad(("fields", name), f"'{name}' is not a field name")
        if not isinstance(spec, dict) or set(spec) - {"policy"} or spec.get("policy") not in POLICIES:
            bad(("fields", name), f"field '{name}' needs {{policy: {' | '.join(POLICIES)}}}")
    temporal = front.get("temporal_fields", [])
    if not isinstance(temporal, list):
        bad(("temporal_fields",), "temporal_fields must be a list of {field, event_type}")
        temporal = []
    for index, item in enumerate(temporal):
        if not isinstance(item, dict) or set(item) - {"field", "event_type"} or not _FIELD.match(str(item.get("field", ""))) \
                or not _EVENT_TYPE.match(str(item.get("event_type", ""))):
            bad(("temporal_fields", index), "each temporal field is {field: name, event_type: PascalCase}")
    if "identity" in front:
        from .identity import parse_identity

        for key_path, message in parse_identity(front["identity"])[1]:
            bad(("identity", *key_path), message)
    return (front if not issues else None), issues
