"""Field intervals (docs/design.md §19): per field, the maximal periods of valid time over which
the reduced value is constant.

The reducer is evaluated at every boundary (each candidate's effective `from` and `until`):
the snapshot as of a boundary holds until the next one. Evaluating `reduce_entity` there again
and again would cost boundaries × candidates; instead each field keeps its candidates in the
reducer's own order (which does not depend on the instant) and the winner at an instant is the
first of them whose interval holds it: a heap of the active ones, swept once. `merge_array`
fields, whose value is a union of many, are swept too: the union of the winning level is made
again only where one of the field's carriers starts or ends. A property
test holds the result to `reduce_entity(as_of=T)` for every T.
"""

from __future__ import annotations

import bisect
import heapq
import json
from collections.abc import Iterable
from typing import Any

from .reduce import Obs, _instant, merge_map, rank, retracted_ids, survivor
from .vocabulary import CORRECTION_PRIORITY

State = tuple[Any, Any, str] | None  # a field's value, the observation(s) that decided it, the rule; None: absent
Points = list[tuple[str, State]]  # (boundary, the state from it on), by boundary


def effective(obs: Obs) -> tuple[str, str | None]:
    """The effective interval `[from, until)`: `from` defaults to the timestamp, `until` to open."""
    return obs.valid_from or obs.timestamp, obs.valid_until


def field_intervals(entity: str, observations: Iterable[Obs], policies: dict[str, str] | None = None,
                    fields: Iterable[str] | None = None) -> dict[str, Any]:
    """`{entity_id, fields: [{field, intervals: [{from, until, value, observation_id, rule}]}]}`
    by field, then `from`; `until` None is open; a period where the field is absent is not listed."""
    policies = policies or {}
    every = list(observations)
    gone = retracted_ids(every)
    merges = merge_map(every, gone)
    target = survivor(entity, merges)
    candidates = [o for o in every if o.entity is not None and o.id not in gone and survivor(o.entity, merges) == target]
    keys = {id(o): (_instant(effective(o)[0]), None if o.valid_until is None else _instant(o.valid_until)) for o in candidates}
    # every boundary, with its text as written (the first spelling of an instant, by id, stands for it)
    spelled: dict[str, str] = {}
    for o in sorted(candidates, key=lambda o: o.id):
        start, until = effective(o)
        start_key, until_key = keys[id(o)]
        spelled.setdefault(start_key, start)
        if until is not None and until_key is not None:
            spelled.setdefault(until_key, until)
    wanted = set(fields) if fields is not None else None
    names = sorted({n for o in candidates for n in o.fields if n != "_deleted" and (wanted is None or n in wanted)})
    gate = _sweep(_gate_order(candidates), keys)
    rankings: dict[str, dict[str, list[Obs]]] = {}

    def carriers(policy: str, name: str) -> list[Obs]:
        """The carriers of `name` in `policy`'s order: every candidate ranked once per policy, then
        parted by field (the keys are total, so a field's carriers keep the order sorting them would give)."""
        if policy not in rankings:
            parted: dict[str, list[Obs]] = {}
            for o in rank(policy, candidates):
                for field in o.fields:
                    parted.setdefault(field, []).append(o)
            rankings[policy] = parted
        return rankings[policy][name]

    out = []
    for name in names:
        policy = policies.get(name, "highest_priority")
        if policy == "merge_array":
            points = _merged_states(carriers("highest_priority", name), name, keys)
        else:
            points = _single_states(name, policy, _sweep(_field_order(carriers(policy, name)), keys))
        out.append({"field": name, "intervals": _joined(_gated(points, gate), spelled)})
    return {"entity_id": target, "fields": out}


def _gate_order(candidates: list[Obs]) -> list[Obs]:
    """The deletion gate's order: priority DESC, timestamp DESC, id ASC (reduce_entity's)."""
    deleting = sorted((o for o in candidates if "_deleted" in o.fields), key=lambda o: o.id)
    deleting.sort(key=lambda o: (o.priority, _instant(o.timestamp)), reverse=True)
    return deleting


def _field_order(ranked: list[Obs]) -> list[Obs]:
    """A field's carriers in the order the reducer picks a winner: corrections first (in the
    policy's order), then the rest; the first whose interval holds an instant wins there."""
    return [o for o in ranked if o.priority >= CORRECTION_PRIORITY] + [o for o in ranked if o.priority < CORRECTION_PRIORITY]


def _sweep(order: list[Obs], keys: dict[int, tuple[str, str | None]]) -> list[tuple[str, Obs | None]]:
    """The first of `order` whose interval holds each of its own boundaries (where one of them
    starts or ends; None: none holds), by boundary: between two of them nothing changes."""
    starts: dict[str, list[int]] = {}
    marks: set[str] = set()
    for position, o in enumerate(order):
        start, until = keys[id(o)]
        starts.setdefault(start, []).append(position)
        marks.add(start)
        if until is not None:
            marks.add(until)
    active: list[int] = []
    winners: list[tuple[str, Obs | None]] = []
    for bound in sorted(marks):
        for position in starts.get(bound, ()):
            heapq.heappush(active, position)
        while active:
            until = keys[id(order[active[0]])][1]
            if until is not None and until <= bound:
                heapq.heappop(active)  # ended: never holds a later boundary
            else:
                break
        winners.append((bound, order[active[0]] if active else None))
    return winners


def _single_states(name: str, policy: str, winners: list[tuple[str, Obs | None]]) -> Points:
    """Each boundary's winner as a state; one state per winner, so a winner that holds on is the same state."""
    made: dict[int, State] = {}
    states = []
    for bound, winner in winners:
        if id(winner) not in made:
            if winner is None or winner.fields[name] is None:
                made[id(winner)] = None  # a winning null removes the field
            else:
                rule = "correction" if winner.priority >= CORRECTION_PRIORITY else policy
                made[id(winner)] = (winner.fields[name], winner.id, rule)
        states.append((bound, made[id(winner)]))
    return states


def _merged_states(order: list[Obs], name: str, keys: dict[int, tuple[str, str | None]]) -> Points:
    """The merged array at each boundary, as the reducer's `_field` makes it, swept once: the field's
    carriers in highest_priority's order (which does not depend on the instant), the active ones a
    sorted list of their places, made again only where one of them starts or ends."""
    starts: dict[str, list[int]] = {}
    ends: dict[str, list[int]] = {}
    for place, o in enumerate(order):
        start, until = keys[id(o)]
        starts.setdefault(start, []).append(place)
        if until is not None and until > start:
            ends.setdefault(until, []).append(place)
    union = _Union(order, name)
    states: Points = []
    for bound in sorted(starts.keys() | ends.keys()):
        for place in ends.get(bound, ()):
            union.remove(place)
        for place in starts.get(bound, ()):
            until = keys[id(order[place])][1]
            if until is None or until > bound:
                union.add(place)
        states.append((bound, union.state()))
    return states


class _Union:
    """The active carriers of a `merge_array` field and, per priority, how many of the non-null
    ones hold each item (its JSON as written): the union of the winning level stops reading once
    it has every item of that level, so a change costs the level's distinct items, not its size."""

    def __init__(self, order: list[Obs], name: str) -> None:
        self.order, self.name = order, name
        self.items = [[(json.dumps(item, ensure_ascii=False, separators=(",", ":")), item)
                       for item in (o.fields[name] if isinstance(o.fields[name], list) else [o.fields[name]])]
                      if o.fields[name] is not None else [] for o in order]
        self.level_end = {}  # priority -> the place after its last carrier (order is by priority, descending)
        for place, o in enumerate(order):
            self.level_end[o.priority] = place + 1
        self.active: list[int] = []
        self.counts: dict[int, dict[str, int]] = {}
        self.last: tuple[tuple[str, ...], list[Any]] = ((), [])  # the last union made, by its items' JSON

    def add(self, place: int) -> None:
        bisect.insort(self.active, place)
        counts = self.counts.setdefault(self.order[place].priority, {})
        for key, _item in self.items[place]:
            counts[key] = counts.get(key, 0) + 1

    def remove(self, place: int) -> None:
        at = bisect.bisect_left(self.active, place)
        if at == len(self.active) or self.active[at] != place:
            return  # never began (its period ended where it started)
        del self.active[at]
        counts = self.counts[self.order[place].priority]
        for key, _item in self.items[place]:
            counts[key] -= 1
            if not counts[key]:
                del counts[key]

    def state(self) -> tuple[Any, Any, str] | None:
        if not self.active:
            return None
        top = self.order[self.active[0]]
        value = top.fields[self.name]
        if top.priority >= CORRECTION_PRIORITY:
            return ([] if value is None else value), [top.id], "correction"
        if value is None:
            return [], [top.id], "merge_array"
        level = self.active[:bisect.bisect_left(self.active, self.level_end[top.priority])]
        distinct = len(self.counts[top.priority])
        merged: dict[str, Any] = {}
        for place in level:
            for key, item in self.items[place]:
                merged.setdefault(key, item)
            if len(merged) == distinct:
                break
        written = tuple(merged)
        if written != self.last[0]:
            self.last = written, list(merged.values())
        return self.last[1], _Contributors(self.order, level, self.name), "merge_array"  # the same list: the same value


class _Contributors:
    """The ids of a merged array's contributors, listed only when an interval starts with them."""

    def __init__(self, order: list[Obs], level: list[int], name: str) -> None:
        self.order, self.level, self.name = order, level, name

    def ids(self) -> list[str]:
        return [self.order[p].id for p in self.level if self.order[p].fields[self.name] is not None]


def _gated(points: Points, gate: list[tuple[str, Obs | None]]) -> Points:
    """The field's states where the deletion gate lets it be: none while the entity is deleted."""
    if not gate:
        return points
    marks = sorted({bound for bound, _ in points} | {bound for bound, _ in gate})
    out: Points = []
    state: State = None
    deleting: Obs | None = None
    i = j = 0
    for bound in marks:
        while i < len(points) and points[i][0] <= bound:
            state = points[i][1]
            i += 1
        while j < len(gate) and gate[j][0] <= bound:
            deleting = gate[j][1]
            j += 1
        out.append((bound, None if deleting is not None and deleting.fields["_deleted"] is True else state))
    return out


def _same_scalar(one: Any, other: Any) -> bool:
    """Text, whole numbers and booleans of one type and value: the same as JSON."""
    return type(one) is type(other) and type(one) in (str, int, bool) and one == other


def _joined(points: Points, spelled: dict[str, str]) -> list[dict[str, Any]]:
    """The states from their boundaries on as intervals (each until the next boundary), equal
    neighbours (the same value as JSON) joined."""
    intervals: list[dict[str, Any]] = []
    previous: str | None = None
    last: object = None
    last_value: object = None
    for index, (bound, state) in enumerate(points):
        until = spelled[points[index + 1][0]] if index + 1 < len(points) else None
        if state is None:
            previous = last = last_value = None
            continue
        if state is last:  # the same state held on
            intervals[-1]["until"] = until
            continue
        last = state
        value, provenance, rule = state
        if intervals and (value is last_value or _same_scalar(value, last_value)):  # equal without writing it
            intervals[-1]["until"] = until
            continue
        last_value = value
        written = json.dumps(value, sort_keys=True, ensure_ascii=False)
        if previous == written and intervals:
            intervals[-1]["until"] = until
            continue
        if isinstance(provenance, _Contributors):
            provenance = provenance.ids()
        intervals.append({"from": spelled[bound], "until": until, "value": value, "observation_id": provenance,
                          "rule": rule})
        previous = written
    return intervals


__all__ = ["effective", "field_intervals"]
