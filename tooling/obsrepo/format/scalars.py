"""The YAML policy's limits and its typing of plain scalars (docs/design.md §2.2), shared by the
strict reader (`document.py`) and the subset reader (`subset.py`), so the two cannot drift."""

from __future__ import annotations

import re
from typing import Any

MAX_DEPTH = 32  # the top-level mapping is level 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_NUMBER_CHARS = 64  # a longer number is refused: quote it if it is text

NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")  # the JSON grammar
NUMBER_START = frozenset("-0123456789")
MISSING = object()
SPECIAL: dict[str, Any] = {"": None, "~": None, "null": None, "true": True, "false": False}
