"""Commands about valid time and disputes (docs/design.md §19): intervals."""

from __future__ import annotations

import json
from typing import Any

import click

from .. import errors
from ..ops import Intervals, Session, run
from ..ops.surface import CLASSIFICATIONS
from .app import main
from .errors import _emit_json, handled
from .options import examples, read_options, read_session


@main.command(epilog=examples("obsrepo intervals contract/c1", "obsrepo intervals contract/c1 --field price --format text",
                              "obsrepo intervals contract/c1 --at HEAD~3"))
@click.argument("entity")
@click.option("--field", "fields", multiple=True, metavar="FIELD", help="Only this field (repeatable).")
@click.option("--at", metavar="REV", help="The repository as it was at REV (what it believed then).")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS), help="Leave out anything classified above this level.")
@click.option("--format", "output_format", type=click.Choice(["json", "text"]), default="json", show_default=True,
              help="json: the intervals object; text: one line per interval.")
@read_options
@handled
@read_session
def intervals(entity: str, fields: tuple[str, ...], at: str | None, max_classification: str | None, output_format: str,
              door: Session) -> int:
    """ENTITY's fields over valid time, period by period.

    Per field, the maximal periods over which its reduced value is constant.
    Each period is [from, until) (until null: open), with the value, the observation that
    decided and its commit; a period where the field is absent is not listed. With --at, what
    the repository believed at that commit about every moment.
    """
    result = run(door, Intervals(entity, tuple(fields), at, max_classification)).to_json()
    if output_format == "json":
        _emit_json(result)
    else:
        click.echo(_text(result))
    return errors.EXIT_OK


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
