"""`obsrepo identities` and `obsrepo distinct` (docs/design.md §20): the review queue of entities
that may be the same, and the declaration that two are not (`merge` declares that they are)."""

from __future__ import annotations

from ..ops import Answer, Distinct, Identities
from .declare import argument, command, required
from .errors import _emit_json
from .options import json_or_text, read_options
from .write import WRITE_OPTIONS, render_written, statement


@command(Identities, names={"entity_type": "--type"}, options=(json_or_text, read_options),
         examples=("obsrepo identities", "obsrepo identities --type person --min-score 0.9 --format json",
                   "obsrepo identities --as-of 2026-03-01 --limit 10"))
def identities(answer: Answer, output_format: str) -> str | None:
    """Pairs of entities that may be the same, best first.

    Pairs of surviving entities of one type, not merged and not declared distinct: `strong`
    when a key of the type's schema (identity.keys) has equal normalised values, `probable`
    when the score (the weighted similarity of the compared fields) reaches the threshold.
    Each pair lists its evidence, field by field. Decide with `obsrepo merge A B` or
    `obsrepo distinct A B --reason TEXT`.
    """
    found = answer.to_json()
    if output_format == "json":
        _emit_json(found)
        return None
    lines = []
    for item in found["candidates"]:
        first, second = item["entities"]
        lines.append(f"{item['score']:.6f} {item['tier']:<8} {first} {second}")
        for ev in item["evidence"]:
            lines.append(f"    {ev['field']}: {ev['values'][0]!r} ~ {ev['values'][1]!r} ({ev['comparison']} {ev['similarity']})")
    shown = len(found["candidates"])
    lines.append(f"{shown} of {found['total']} pair(s) at {found['at_commit'][:12]}" if shown else
                 f"no pairs at {found['at_commit'][:12]}")
    return "\n".join(lines)


@command(Distinct, names=statement({
    "entity": argument("A"), "other": argument("B"),
    "reason": required(help_text="Why they are not the same (one line; it goes into the event).")}),
    options=WRITE_OPTIONS, examples=('obsrepo distinct person/jon-smith person/john-smith --reason "Father and son"',
                                     'obsrepo distinct company/acme company/acme-labs --reason "Two companies" --commit'))
def distinct(answer: Answer, output_format: str) -> str | None:
    """Declare A and B distinct (DISTINCT_FROM): the pair leaves `identities` for good.

    `check` then refuses a merge of the two (rule identity-conflict), also through a chain of merges.
    """
    return render_written(answer, output_format)
