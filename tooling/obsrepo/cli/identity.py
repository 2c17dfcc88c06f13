"""`obsrepo identities` and `obsrepo distinct` (docs/design.md §20): the review queue of entities
that may be the same, and the declaration that two are not (`merge` declares that they are)."""

from __future__ import annotations

import click

from .. import errors
from ..ops import Distinct, Identities, Session, run
from .app import main
from .errors import _emit_json, handled
from .options import _paged, at_option, examples, json_or_text, read_options, read_session
from .write import render_written, write_options, writer


@main.command(epilog=examples("obsrepo identities", "obsrepo identities --type person --min-score 0.9 --format json",
                              "obsrepo identities --as-of 2026-03-01 --limit 10"))
@click.option("--type", "entity_type", metavar="TYPE", help="Only pairs of entities of this type.")
@click.option("--min-score", type=float, help="Only pairs scoring at least this (0..1).")
@click.option("--as-of", metavar="TIME", help="Valid time: snapshots of the observations with timestamp ≤ TIME.")
@at_option
@_paged
@json_or_text
@read_options
@handled
@read_session
def identities(entity_type: str | None, min_score: float | None, as_of: str | None, at: str | None, limit: int,
               offset: int, output_format: str, door: Session) -> int:
    """Pairs of entities that may be the same, best first.

    Pairs of surviving entities of one type, not merged and not declared distinct: `strong`
    when a key of the type's schema (identity.keys) has equal normalised values, `probable`
    when the score (the weighted similarity of the compared fields) reaches the threshold.
    Each pair lists its evidence, field by field. Decide with `obsrepo merge A B` or
    `obsrepo distinct A B --reason TEXT`.
    """
    answer = run(door, Identities(entity_type, min_score, as_of, at, limit, offset)).to_json()
    if output_format == "json":
        _emit_json(answer)
        return errors.EXIT_OK
    for item in answer["candidates"]:
        first, second = item["entities"]
        click.echo(f"{item['score']:.6f} {item['tier']:<8} {first} {second}")
        for ev in item["evidence"]:
            click.echo(f"    {ev['field']}: {ev['values'][0]!r} ~ {ev['values'][1]!r} ({ev['comparison']} {ev['similarity']})")
    shown = len(answer["candidates"])
    click.echo(f"{shown} of {answer['total']} pair(s) at {answer['at_commit'][:12]}" if shown else
               f"no pairs at {answer['at_commit'][:12]}")
    return errors.EXIT_OK


@main.command(epilog=examples('obsrepo distinct person/jon-smith person/john-smith --reason "Father and son"',
                              'obsrepo distinct company/acme company/acme-labs --reason "Two companies" --commit'))
@click.argument("entity", metavar="A")
@click.argument("other", metavar="B")
@click.option("--reason", required=True, help="Why they are not the same (one line; it goes into the event).")
@write_options
@handled
def distinct(entity: str, other: str, reason: str, as_commit: bool, branch: str | None, source: str | None,
             tenant: str | None, output_format: str) -> int:
    """Declare A and B distinct (DISTINCT_FROM): the pair leaves `identities` for good.

    `check` then refuses a merge of the two (rule identity-conflict), also through a chain of merges.
    """
    from ..ops import destination

    request = Distinct(entity, other, reason, source, destination(as_commit, branch))
    return render_written(run(writer(tenant), request), output_format)
