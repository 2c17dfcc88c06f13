"""Writes front matter as YAML that the strict reader reads back to exactly the same values.

Strings are written plain only when the reader's policy keeps them as the same string;
everything else is double-quoted JSON, which is valid YAML.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from ..errors import InputError

KEY_ORDER = (
    "spec", "id", "timestamp", "source", "event", "type", "scope", "entity", "fields", "priority",
    "specificity", "corrects", "retracts", "relations", "tenant", "classification", "source_ref",
    "interpretation", "data", "context", "trace_ref",
)
_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./@+-]*(?: [A-Za-z0-9_./@+()-]+)*")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})")
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_RESERVED = {"true", "false", "null", "~", "y", "n", "yes", "no", "on", "off"}


# not printable in YAML, or a line break YAML would fold (NEL, LS, PS)
_NON_PRINTABLE = re.compile("[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _quoted(value: str) -> str:
    """A JSON string, with the characters YAML refuses to see raw written as escapes."""
    return _NON_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))


def scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{value} is not a finite number; numbers must be finite")  # json.dumps would write NaN: a string
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str) and (_PLAIN.fullmatch(value) and value.lower() not in _RESERVED or _TIMESTAMP.fullmatch(value)):
        return value
    return _quoted(value)


def _key(key: str) -> str:
    return key if _PLAIN_KEY.fullmatch(key) and key.lower() not in _RESERVED else _quoted(key)


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return scalar(value)


def _simple(value: Any) -> bool:
    if isinstance(value, list):
        return all(not isinstance(v, (dict, list)) for v in value)
    if isinstance(value, dict):
        return len(value) <= 4 and all(not isinstance(v, (dict, list)) for v in value.values())
    return True


def _block(key: str, value: Any, indent: int, out: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict) and value and not (indent and _simple(value)):
        out.append(f"{pad}{_key(key)}:")
        for k, v in value.items():
            _block(k, v, indent + 2, out)
    elif isinstance(value, list) and value and not _simple(value):
        out.append(f"{pad}{_key(key)}:")
        for item in value:
            out.append(f"{pad}  - {_flow(item)}")
    else:
        out.append(f"{pad}{_key(key)}: {_flow(value)}")


def front_matter(front: dict[str, Any], as_given: bool = False) -> str:
    """The YAML lines of a front matter, keys in the documented order, extensions last (or in
    the order given: an edited comprehension keeps its author's order)."""
    order = {k: i for i, k in enumerate(KEY_ORDER)}
    out: list[str] = []
    for key in (list(front) if as_given else sorted(front, key=lambda k: (order.get(k, len(order)), k))):
        _block(key, front[key], 0, out)
    return "\n".join(out) + "\n"


def document(front: dict[str, Any], body: str, as_given: bool = False) -> str:
    body = body.replace("\r\n", "\n").rstrip()
    return "---\n" + front_matter(front, as_given) + "---\n" + (f"\n{body}\n" if body else "")
