"""The `identity` block of an entity schema (docs/design.md §20): which fields make two
entities of one type likely the same, and how each is compared. Pure: parsing, checking and
the one normalisation every comparison starts from.

    identity:
      keys: [email, tax_id]            # an equal normalised value: a strong candidate
      compare:                         # fields whose similarities make the score
        surname: {method: name}
        date_of_birth: {method: date}
      threshold: 0.8                   # a score at or above it: a probable candidate

Without the block (or without a schema) a type has no keys and compares its string fields
present on at least half of its entities with `name`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

# how a field is compared; each gives a similarity in [0, 1] (index/identity.py says how)
METHODS = ("exact", "name", "date", "number", "code")
DEFAULT_THRESHOLD = 0.8
_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DROP = re.compile(r"[\W_]+", re.UNICODE)  # white space and punctuation (anything not a letter or digit)


@dataclass(frozen=True)
class IdentitySpec:
    """One type's identity rules; `declared` is False for the default (no `identity` block)."""

    keys: tuple[str, ...] = ()
    compare: dict[str, str] = field(default_factory=dict)  # field → method
    threshold: float = DEFAULT_THRESHOLD
    declared: bool = False


def normalize(value: str) -> str:
    """Unicode NFKC, case folding, white space and punctuation removed: 'ACME Corp.' → 'acmecorp'.
    An email keeps its '@' (its local part and its domain are normalised apart), so
    'jon@acme.com' and 'jo@nacme.com' stay different."""
    text = unicodedata.normalize("NFKC", value).casefold()
    if text.count("@") == 1:
        local, domain = text.split("@")
        local, domain = _DROP.sub("", local), _DROP.sub("", domain)
        if local and domain:
            return f"{local}@{domain}"
    return _DROP.sub("", text)


def parse_identity(value: Any) -> tuple[IdentitySpec | None, list[tuple[tuple, str]]]:
    """The spec of an `identity` block, and its problems as (key path below `identity`, message).
    A field need not be among the schema's `fields` (those only name reducer policies)."""
    problems: list[tuple[tuple, str]] = []
    if not isinstance(value, dict):
        return None, [((), "identity is a mapping: {keys: [field, …], compare: {field: {method}}, threshold}")]
    for key in sorted(set(value) - {"keys", "compare", "threshold"}, key=str):
        problems.append(((key,), f"unknown key '{key}' in identity (keys, compare, threshold)"))
    keys = value.get("keys", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        problems.append((("keys",), "identity.keys is a list of field names"))
        keys = []
    for index, name in enumerate(keys):
        problems.extend(_field_problems(("keys", index), name))
    compare = value.get("compare", {})
    if not isinstance(compare, dict):
        problems.append((("compare",), "identity.compare is a mapping of field → {method: " + " | ".join(METHODS) + "}"))
        compare = {}
    methods: dict[str, str] = {}
    for name, spec in compare.items():
        problems.extend(_field_problems(("compare", name), str(name)))
        method = spec.get("method") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or set(spec) - {"method"} or method not in METHODS:
            problems.append((("compare", name), f"field '{name}' needs {{method: {' | '.join(METHODS)}}}"
                             + (f", not '{method}'" if isinstance(method, str) else "")))
        else:
            methods[str(name)] = method
    threshold = value.get("threshold", DEFAULT_THRESHOLD)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
        problems.append((("threshold",), "identity.threshold is a number in [0, 1]"))
        threshold = DEFAULT_THRESHOLD
    if problems:
        return None, problems
    return IdentitySpec(tuple(keys), methods, float(threshold), True), []


def _field_problems(path: tuple, name: str) -> list[tuple[tuple, str]]:
    return [] if _FIELD.match(name) else [(path, f"'{name}' is not a field name")]
