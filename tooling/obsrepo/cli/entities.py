"""Commands that ask about entities: snapshot, provenance, entities, find, observations,
relations, related, timeline, history; each declared by its request (declare.py) and a renderer."""

from __future__ import annotations

import json

from ..ops import Answer, Entities, Find, History, Observations, Provenance, Related, Relations, Snapshot, Timeline
from .declare import command, flag
from .errors import _emit_json
from .options import json_default, json_or_text, read_options

DIRECTIONS = ("in", "out", "both")  # the command line's spellings (seed 003's inbound and outbound are MCP's)


def generic(answer: Answer, output_format: str) -> str | None:
    """The JSON result, or its readable lines."""
    if output_format == "json":
        _emit_json(answer.to_json())
        return None
    from .render import render_generic

    return render_generic(answer.to_json())


@command(Snapshot, options=(json_default("the snapshot object; text: one line per field with its source."), read_options),
         examples=("obsrepo snapshot company/acme", "obsrepo snapshot company/acme --as-of 2026-03-01 --format text",
                   "obsrepo snapshot company/acme --at HEAD~3 --explain"))
def snapshot(answer: Answer, output_format: str) -> str | None:
    """ENTITY as its observations say it is, field by field.

    ENTITY is type/key (company/acme); each field comes with the observation it came from.
    Per field the value of the highest priority wins, then the most specific, then the latest;
    corrections win over everything else, retracted observations do not count, and an entity
    merged into another (DUPLICATE_OF) answers with the survivor.
    """
    if output_format == "json":
        _emit_json(answer.to_json())
        return None
    from .render import render_snapshot

    return render_snapshot(answer.to_json())


@command(Provenance, options=(json_default("one object; text: one line per key."), read_options),
         examples=("obsrepo provenance company/acme phone", "obsrepo provenance company/acme phone --format text"))
def provenance(answer: Answer, output_format: str) -> str | None:
    """Where FIELD of ENTITY's snapshot came from.

    The winning observation, its file, the commit that added it, its author, and the rule that decided.
    """
    result = answer.to_json()
    if output_format == "json":
        _emit_json(result)
        return None
    return "\n".join(f"{key}: {json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value}"
                     for key, value in result.items())


@command(Entities, names={"entity_type": "--type"}, options=(json_or_text, read_options),
         examples=("obsrepo entities", "obsrepo entities --type invoice --limit 10 --format json"))
def entities(answer: Answer, output_format: str) -> str | None:
    """Entities with their snapshots, by entity id.

    An entity merged into another (DUPLICATE_OF) lives on in its survivor and is not listed.
    """
    return generic(answer, output_format)


@command(Find, names={"entity_type": "--type"}, options=(json_or_text, read_options),
         examples=('obsrepo find "ACME Corp."', "obsrepo find billing@acme.example --type company --format json"))
def find(answer: Answer, output_format: str) -> str | None:
    """Entities by key, name, email or other identifying field.

    IDENTIFIER is compared with case, accents, white space and punctuation ignored.
    """
    return generic(answer, output_format)


@command(Observations, options=(json_or_text, read_options),
         examples=("obsrepo observations company/acme", "obsrepo observations company/acme --limit 10 --offset 10"))
def observations(answer: Answer, output_format: str) -> str | None:
    """The observations about ENTITY, newest first.

    Observations of entities merged into ENTITY are included.
    """
    return generic(answer, output_format)


@command(Relations, names={"types": "--relation", "direction": flag("--direction", choices=DIRECTIONS)},
         options=(json_or_text, read_options),
         examples=("obsrepo relations company/acme", "obsrepo relations invoice/inv-2041 --relation PART_OF --direction out"))
def relations(answer: Answer, output_format: str) -> str | None:
    """The relationships of ENTITY.

    Both directions unless --direction says otherwise; retracted relations do not count.
    """
    return generic(answer, output_format)


@command(Related, names={"types": "--relation", "direction": flag("--direction", choices=DIRECTIONS)},
         options=(json_or_text, read_options),
         examples=("obsrepo related company/acme", "obsrepo related task/44 --hops 3 --relation DEPENDS_ON --direction out"))
def related(answer: Answer, output_format: str) -> str | None:
    """Entities reachable from ENTITY through relationships.

    Each entity is listed once, up to --hops relations away; a merged-away entity is listed
    only as the entity it was merged into.
    """
    return generic(answer, output_format)


@command(Timeline, options=(json_or_text, read_options),
         examples=("obsrepo timeline --entity invoice/inv-2041", "obsrepo timeline --event-type PaymentDue --after 2026-03-01"))
def timeline(answer: Answer, output_format: str) -> str | None:
    """Events from date fields and observation times, newest first.

    A snapshot field holding an ISO date (invoice_date → InvoiceIssued) is an event, and so is
    each observation at its own timestamp (with its type).
    """
    return generic(answer, output_format)


@command(History, options=(json_or_text, read_options),
         examples=("obsrepo history company/acme", "obsrepo history company/acme --format json"))
def history(answer: Answer, output_format: str) -> str | None:
    """How ENTITY's snapshot changed, commit by commit.

    Every field that changed, with the commit, its author and the observation that changed it.
    """
    return generic(answer, output_format)
