"""Commands about valid time and disputes (docs/design.md §19): intervals and contested, each
declared by its request (declare.py) and a renderer."""

from __future__ import annotations

import json
from typing import Any

from ..ops import Answer, Contested, Intervals
from .declare import command
from .errors import _emit_json
from .options import json_default, read_options


@command(Intervals, names={"fields": "--field"}, options=(json_default("the intervals object; text: one line per interval."),
                                                             read_options),
         examples=("obsrepo intervals contract/c1", "obsrepo intervals contract/c1 --field price --format text",
                   "obsrepo intervals contract/c1 --at HEAD~3"))
def intervals(answer: Answer, output_format: str) -> str | None:
    """ENTITY's fields over valid time, period by period.

    Per field, the maximal periods over which its reduced value is constant.
    Each period is [from, until) (until null: open), with the value, the observation that
    decided and its commit; a period where the field is absent is not listed. With --at, what
    the repository believed at that commit about every moment.
    """
    result = answer.to_json()
    if output_format == "json":
        _emit_json(result)
        return None
    return _text(result)


def _text(result: dict[str, Any]) -> str:
    lines = [f"{result['entity_id']} at {(result['at_commit'] or '')[:12]}"]
    for field in result["fields"]:
        for span in field["intervals"]:
            until = span["until"] or "open"
            value = json.dumps(span["value"], ensure_ascii=False)
            winner = span["observation_id"]
            winner = ", ".join(winner) if isinstance(winner, list) else winner
            lines.append(f"{field['field']}  {span['from']} .. {until}  {value}  ({winner}, {span['rule']})")
    return "\n".join(lines)


@command(Contested, names={"entities": "--entity", "entity_type": "--type", "scopes": "--scope"},
         options=(json_default("the contests object; text: one line per contest."), read_options),
         examples=("obsrepo contested", "obsrepo contested --type contract --window 2h --format text",
                   "obsrepo contested --entity contract/c1 --as-of 2026-03-15 --at HEAD~3"))
def contested(answer: Answer, output_format: str) -> str | None:
    """Fields where two sources disagree about the same time.

    A field is contested when, with no correction of it, an observation at the winner's
    priority from another source gives another value for a time within --window of the
    winner's (its valid from, else its timestamp). The reducer still decides; the contest says
    that only a tie-break (decided_by: specificity, timestamp or id) chose. By entity id, then
    field; the challengers in the reducer's order.
    """
    result = answer.to_json()
    if output_format == "json":
        _emit_json(result)
        return None
    return _contests_text(result)


def _contests_text(result: dict[str, Any]) -> str:
    lines = [f"{result['total']} contested at {(result['at_commit'] or '')[:12]}, valid at {result['valid_at']}"]
    for contest in result["contests"]:
        winner = contest["winner"]
        others = "; ".join(f"{json.dumps(c['value'], ensure_ascii=False)} from {c['source']} ({c['observation_id']})"
                           for c in contest["challengers"])
        lines.append(f"{contest['entity_id']}  {contest['field']}: {json.dumps(winner['value'], ensure_ascii=False)} "
                     f"from {winner['source']} ({winner['observation_id']}, by {contest['decided_by']})  vs  {others}")
    return "\n".join(lines)
