"""Commands about valid time and disputes (docs/design.md §19): intervals, declared by its
request (declare.py) and a renderer."""

from __future__ import annotations

import json
from typing import Any

import click

from ..ops import Answer, Intervals
from .declare import command
from .errors import _emit_json
from .options import read_options

interval_format = click.option("--format", "output_format", type=click.Choice(["json", "text"]), default="json",
                               show_default=True, help="json: the intervals object; text: one line per interval.")


@command(Intervals, names={"fields": "--field"}, options=(interval_format, read_options),
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
