"""Commands that ask about entities: snapshot, provenance, entities, find, observations,
relations, related, timeline, history."""

from __future__ import annotations

import json

import click

from .. import errors
from ..ops import Entities, Find, History, Observations, Provenance, Related, Relations, Session, Snapshot, Timeline, run
from ..ops.surface import CLASSIFICATIONS
from .app import main
from .errors import _emit_json, handled
from .options import _json_out, _paged, at_option, examples, json_or_text, read_options, read_session


@main.command(epilog=examples("obsrepo snapshot company/acme", "obsrepo snapshot company/acme --as-of 2026-03-01 --format text",
                              "obsrepo snapshot company/acme --at HEAD~3 --explain"))
@click.argument("entity")
@click.option("--at", metavar="REV", help="The repository as it was at REV.")
@click.option("--as-of", metavar="TIME", help="Only observations with timestamp ≤ TIME (valid time).")
@click.option("--explain", is_flag=True, help="Every candidate value per field, and the rule that decided.")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS), help="Leave out anything classified above this level.")
@click.option("--include-expired", is_flag=True, help="Also count observations that retention expired.")
@click.option("--format", "output_format", type=click.Choice(["json", "text"]), default="json", show_default=True,
              help="json: the snapshot object; text: one line per field with its source.")
@read_options
@handled
@read_session
def snapshot(entity: str, at: str | None, as_of: str | None, explain: bool, max_classification: str | None,
             include_expired: bool, output_format: str, door: Session) -> int:
    """ENTITY as its observations say it is, field by field.

    ENTITY is type/key (company/acme); each field comes with the observation it came from.
    Per field the value of the highest priority wins, then the most specific, then the latest;
    corrections win over everything else, retracted observations do not count, and an entity
    merged into another (DUPLICATE_OF) answers with the survivor.
    """
    result = run(door, Snapshot(entity, at, as_of, explain, max_classification, include_expired)).to_json()
    if output_format == "json":
        _emit_json(result)
    else:
        from .render import render_snapshot

        click.echo(render_snapshot(result))
    return errors.EXIT_OK


@main.command(epilog=examples("obsrepo provenance company/acme phone", "obsrepo provenance company/acme phone --format text"))
@click.argument("entity")
@click.argument("field")
@click.option("--at", metavar="REV", help="The repository as it was at REV.")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS), help="Leave out anything classified above this level.")
@click.option("--include-expired", is_flag=True, help="Also count observations that retention expired.")
@click.option("--format", "output_format", type=click.Choice(["json", "text"]), default="json", show_default=True,
              help="json: one object; text: one line per key.")
@read_options
@handled
@read_session
def provenance(entity: str, field: str, at: str | None, max_classification: str | None, include_expired: bool,
               output_format: str, door: Session) -> int:
    """Where FIELD of ENTITY's snapshot came from.

    The winning observation, its file, the commit that added it, its author, and the rule that decided.
    """
    result = run(door, Provenance(entity, field, at, max_classification, include_expired)).to_json()
    if output_format == "json":
        _emit_json(result)
    else:
        click.echo("\n".join(f"{key}: {json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value}"
                             for key, value in result.items()))
    return errors.EXIT_OK


@main.command(epilog=examples("obsrepo entities", "obsrepo entities --type invoice --limit 10 --format json"))
@click.option("--type", "entity_type", help="Only entities of this type (the part before the slash).")
@_paged
@at_option
@json_or_text
@read_options
@handled
@read_session
def entities(entity_type: str | None, limit: int, offset: int, at: str | None, output_format: str, door: Session) -> int:
    """Entities with their snapshots, by entity id.

    An entity merged into another (DUPLICATE_OF) lives on in its survivor and is not listed.
    """
    return _json_out(run(door, Entities(entity_type, limit, offset, at)), output_format)


@main.command(epilog=examples('obsrepo find "ACME Corp."', "obsrepo find billing@acme.example --type company --format json"))
@click.argument("identifier")
@click.option("--type", "entity_type", help="Only entities of this type.")
@_paged
@at_option
@json_or_text
@read_options
@handled
@read_session
def find(identifier: str, entity_type: str | None, limit: int, offset: int, at: str | None, output_format: str,
         door: Session) -> int:
    """Entities by key, name, email or other identifying field.

    IDENTIFIER is compared with case, accents, white space and punctuation ignored.
    """
    return _json_out(run(door, Find(identifier, entity_type, limit, offset, at)), output_format)


@main.command(epilog=examples("obsrepo observations company/acme", "obsrepo observations company/acme --limit 10 --offset 10"))
@click.argument("entity")
@_paged
@at_option
@json_or_text
@read_options
@handled
@read_session
def observations(entity: str, limit: int, offset: int, at: str | None, output_format: str, door: Session) -> int:
    """The observations about ENTITY, newest first.

    Observations of entities merged into ENTITY are included.
    """
    return _json_out(run(door, Observations(entity, limit, offset, at)), output_format)


@main.command(epilog=examples("obsrepo relations company/acme", "obsrepo relations invoice/inv-2041 --relation PART_OF --direction out"))
@click.argument("entity")
@click.option("--relation", "types", multiple=True, help="Only this relation type (repeatable).")
@click.option("--direction", type=click.Choice(["in", "out", "both"]), default="both", show_default=True,
              help="out: ENTITY's own relations; in: those pointing at it; both.")
@at_option
@json_or_text
@read_options
@handled
@read_session
def relations(entity: str, types: tuple[str, ...], direction: str, at: str | None, output_format: str,
              door: Session) -> int:
    """The relationships of ENTITY.

    Both directions unless --direction says otherwise; retracted relations do not count.
    """
    return _json_out(run(door, Relations(entity, direction, types, at)), output_format)


@main.command(epilog=examples("obsrepo related company/acme", "obsrepo related task/44 --hops 3 --relation DEPENDS_ON --direction out"))
@click.argument("entity")
@click.option("--relation", "types", multiple=True, help="Follow only this relation type (repeatable).")
@click.option("--direction", type=click.Choice(["in", "out", "both"]), default="both", show_default=True,
              help="Follow relations outwards, inwards or both.")
@click.option("--hops", type=int, default=1, show_default=True, help="How many relations away to go (1 or more).")
@click.option("--limit", type=int, help="List only the first N entities by id (the totals still count every one).")
@at_option
@json_or_text
@read_options
@handled
@read_session
def related(entity: str, types: tuple[str, ...], direction: str, hops: int, limit: int | None, at: str | None,
            output_format: str, door: Session) -> int:
    """Entities reachable from ENTITY through relationships.

    Each entity is listed once, up to --hops relations away; a merged-away entity is listed
    only as the entity it was merged into.
    """
    return _json_out(run(door, Related(entity, types, direction, hops, at, limit)), output_format)


@main.command(epilog=examples("obsrepo timeline --entity invoice/inv-2041", "obsrepo timeline --event-type PaymentDue --after 2026-03-01"))
@click.option("--entity", help="Only events of this entity.")
@click.option("--event-type", help="Only events of this type (InvoiceIssued, PaymentDue, an observation type …).")
@click.option("--after", help="From this time on (inclusive): ISO 8601 with a timezone, or a date.")
@click.option("--before", help="Before this time (exclusive).")
@click.option("--limit", type=int, default=1000, show_default=True, help="At most this many (1..1000).")
@click.option("--offset", type=int, default=0, help="Skip this many first (for the next page).")
@click.option("--max-classification", type=click.Choice(CLASSIFICATIONS), help="Leave out anything classified above this level.")
@at_option
@json_or_text
@read_options
@handled
@read_session
def timeline(entity: str | None, event_type: str | None, after: str | None, before: str | None, limit: int,
             offset: int, max_classification: str | None, at: str | None, output_format: str, door: Session) -> int:
    """Events from date fields and observation times, newest first.

    A snapshot field holding an ISO date (invoice_date → InvoiceIssued) is an event, and so is
    each observation at its own timestamp (with its type).
    """
    request = Timeline(entity, event_type, after, before, limit, offset, at, max_classification)
    return _json_out(run(door, request), output_format)


@main.command(epilog=examples("obsrepo history company/acme", "obsrepo history company/acme --format json"))
@click.argument("entity")
@json_or_text
@read_options
@handled
@read_session
def history(entity: str, output_format: str, door: Session) -> int:
    """How ENTITY's snapshot changed, commit by commit.

    Every field that changed, with the commit, its author and the observation that changed it.
    """
    return _json_out(run(door, History(entity)), output_format)

