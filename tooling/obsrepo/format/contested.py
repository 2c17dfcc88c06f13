"""Contested values (docs/design.md §19), defined once: where two sources disagree about the same
time and only a tie-break of the reducer chose.

A field is contested (at a commit and a valid time) when no candidate of it is a correction, and
a challenger at the winner's priority has a different value (JSON equality; `merge_array` fields
never), comes from a different `source`, is valid then, and its effective `from` lies within the
window of the winner's. The reducer still decides: the winner is its winner. A correction, a
retraction, an ended period, or a later observation outside the window settles it.

`field_contest` is the sentence over one field's candidates; `entity_contests` chooses those
candidates as the reducer does (merges, retractions, which observations count, the deletion
gate). Every reader (the index's SQL path, snapshots, diff, recall) calls these; nothing here
does I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from .reduce import Obs, _instant, candidates_of, deletion_order, rank
from .vocabulary import CORRECTION_PRIORITY

DEFAULT_WINDOW = "1d"
MAX_WINDOW_SECONDS = 366 * 86400 * 100  # a century: wider is no window at all
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_WINDOW = re.compile(r"^(\d{1,12})([smhd])$")
# the rank keys a policy compares after priority (equal between a winner and its challengers)
_KEYS = {"highest_priority": ("specificity", "timestamp", "id"), "most_specific": ("specificity", "timestamp", "id"),
         "last_write": ("timestamp", "id")}


def parse_window(text: str) -> int:
    """`<n>s|m|h|d` (or `0`, the same instant) as seconds; ValueError otherwise."""
    written = text.strip()
    if written == "0":
        return 0
    match = _WINDOW.match(written)
    if match is None:
        raise ValueError(f"window '{text}' is not <n>s, <n>m, <n>h or <n>d (or 0)")
    seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if seconds > MAX_WINDOW_SECONDS:
        raise ValueError(f"window '{text}' is longer than a century")
    return seconds


def start_of(obs: Obs) -> str:
    """The effective `from`: the period's start as written, else the timestamp."""
    return obs.valid_from or obs.timestamp


def _micros(instant: str) -> int:
    moment = datetime.fromisoformat(instant.replace("Z", "+00:00"))
    return (moment.toordinal() * 86400 + moment.hour * 3600 + moment.minute * 60 + moment.second) * 1_000_000 + \
        moment.microsecond


def same_json(left: Any, right: Any) -> bool:
    """JSON equality: objects whatever their key order, numbers by value (1 = 1.0), a boolean
    never a number."""
    return _canonical(left) == _canonical(right)


def _canonical(value: Any) -> str:
    def plain(item: Any) -> Any:
        if isinstance(item, bool) or item is None or isinstance(item, str):
            return item
        if isinstance(item, float) and item.is_integer():
            return int(item)
        if isinstance(item, dict):
            return {key: plain(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [plain(inner) for inner in item]
        return item

    return json.dumps(plain(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def field_contest(name: str, policy: str, carriers: Iterable[Obs], window_seconds: int) -> dict[str, Any] | None:
    """The contest over field `name` among `carriers` (the candidates that carry it, each valid
    at the instant asked about), or None when it is settled: `{field, policy, decided_by, winner,
    challengers}`, the challengers in the reducer's order."""
    if policy == "merge_array":
        return None
    among = list(carriers)
    if not among or any(o.priority >= CORRECTION_PRIORITY for o in among):
        return None
    ranked = rank(policy, among)
    winner = ranked[0]
    start, window = _micros(start_of(winner)), window_seconds * 1_000_000
    value = _canonical(winner.fields[name])
    challengers = [o for o in ranked[1:]
                   if o.priority == winner.priority and o.source != winner.source
                   and _canonical(o.fields[name]) != value and abs(_micros(start_of(o)) - start) <= window]
    if not challengers:
        return None
    return {"field": name, "policy": policy, "decided_by": decided_by(policy, winner, challengers[0]),
            "winner": side(name, winner), "challengers": [side(name, o) for o in challengers]}


def decided_by(policy: str, winner: Obs, challenger: Obs) -> str:
    """The first rank key (`specificity`, `timestamp`, `id`, as the policy orders them) on which
    the winner beat the challenger."""
    values = {"specificity": lambda o: o.specificity, "timestamp": lambda o: _instant(o.timestamp), "id": lambda o: o.id}
    for key in _KEYS.get(policy, _KEYS["highest_priority"]):
        if values[key](winner) != values[key](challenger):
            return key
    return "id"  # ids are unique: never reached


def side(name: str, obs: Obs) -> dict[str, Any]:
    return {"observation_id": obs.id, "value": obs.fields[name], "source": obs.source, "from": start_of(obs),
            "priority": obs.priority, "specificity": obs.specificity}


def entity_contests(entity: str, observations: Iterable[Obs], policies: dict[str, str] | None = None,
                    window_seconds: int = 86400, as_of: str | None = None,
                    valid_at: str | None = None) -> list[dict[str, Any]]:
    """The contests of the entity's fields, by field: the reducer's candidates (docs/design.md §4,
    with §19's rule of which count: as of `as_of`, else at the commit's time `valid_at`); none
    for a deleted entity (it has no values to dispute)."""
    policies = policies or {}
    target, candidates = candidates_of(entity, observations, as_of, valid_at)
    gate = deletion_order(candidates)
    if gate and gate[0].fields["_deleted"] is True:
        return []
    names = sorted({name for o in candidates for name in o.fields if name != "_deleted"})
    out = []
    for name in names:
        contest = field_contest(name, policies.get(name, "highest_priority"),
                                [o for o in candidates if name in o.fields], window_seconds)
        if contest is not None:
            out.append({"entity_id": target, **contest})
    return out


def contested_map(contests: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """`{field: [challenger ids]}`: what a snapshot says of its contests."""
    return {c["field"]: [o["observation_id"] for o in c["challengers"]] for c in contests}


__all__ = ["DEFAULT_WINDOW", "contested_map", "decided_by", "entity_contests", "field_contest", "parse_window",
           "same_json", "start_of"]
