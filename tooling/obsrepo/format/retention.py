"""retention/v1 (`schemas/retention.yaml`, docs/design.md §14): how long observations stay in
answers, per type and/or effective classification. Read with the same strict YAML policy.

    spec: retention/v1
    policies:                       # the shortest ttl among the matching policies applies
      - {type: chat.line, ttl: 30d}
      - {classification: restricted, ttl: 365d}
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .report import Issue
from .schema_file import SchemaFile
from .vocabulary import CLASSIFICATIONS

RULE = "retention-policy"
_TTL = re.compile(r"^([1-9][0-9]{0,5})d$")  # whole days, up to 999,999 (beyond year 9999 anyway)
_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")


@dataclass(frozen=True)
class Policy:
    type: str | None
    classification: str | None
    ttl_days: int

    def as_dict(self) -> dict:
        return {"type": self.type, "classification": self.classification, "ttl": f"{self.ttl_days}d"}


def read_retention(path: str, data: bytes) -> tuple[list[Policy] | None, list[Issue]]:
    """Parse and check the retention file; (policies or None, issues)."""
    file = SchemaFile(path, data, RULE)
    front, issues, bad = file.front, file.issues, file.bad
    if front is None:
        return None, issues
    file.unknown_keys(front, ("spec", "policies"))
    if front.get("spec") != "retention/v1":
        bad(("spec",), "spec must be retention/v1")
    items = front.get("policies", [])
    if not isinstance(items, list):
        bad(("policies",), "policies must be a list of {type?, classification?, ttl: <days>d}")
        items = []
    policies = []
    for index, item in enumerate(items):
        where = ("policies", index)
        if not isinstance(item, dict):
            bad(where, "each policy is a mapping {type?, classification?, ttl: <days>d}")
            continue
        file.unknown_keys(item, ("type", "classification", "ttl"), where, " in a policy (type, classification, ttl)")
        kind, level, ttl = item.get("type"), item.get("classification"), item.get("ttl")
        if kind is None and level is None:
            bad(where, "a policy names a type, a classification or both")
        if kind is not None and not (isinstance(kind, str) and _TYPE.match(kind)):
            bad((*where, "type"), "type is an observation type such as chat.line")
        if level is not None and level not in CLASSIFICATIONS:
            bad((*where, "classification"), f"classification is one of {', '.join(CLASSIFICATIONS)}")
        match = _TTL.match(ttl) if isinstance(ttl, str) else None
        if match is None:
            bad((*where, "ttl"), "ttl is a whole number of days written like 30d")
            continue
        policies.append(Policy(kind, level, int(match.group(1))))
    return (policies if not issues else None), issues
