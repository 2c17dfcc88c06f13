"""`obsrepo new`: one new observation, from flags (the document's own fields) or a JSON object;
its period and where it goes (--commit, --branch) are declared by its request (declare.py)."""

from __future__ import annotations

import math
import os
from typing import Any

import click

from .. import errors
from ..errors import UsageError
from ..ops import Binding, Flags, New, Session, run
from ..ops.surface import option_timestamp, parse_field, read_json_input, read_text
from .app import main
from .declare import options_of, values_of
from .errors import handled
from .options import examples, output_format
from .write import DESTINATION, render_written

# what new takes of its request besides the front matter and body its flags build: the
# period, and --commit and --branch
NEW = {"front": None, "body": None, "tool": None, "destination": DESTINATION}
# the front matter's keys as flags (Flags): a field and a relation are spelt in the singular
FLAGS = {"fields": "--field", "relations": "--relation"}


@main.command(epilog=examples(
    'obsrepo new --source agent/crm --event "Invoice INV-2041 issued" --type invoice.issued \\',
    "    --entity invoice/inv-2041 --field total=1250 --field currency=EUR --scope company/acme",
    'obsrepo new --source human/alice --event "Phone number fixed" --entity company/acme \\',
    "    --field phone=+4420 --corrects obs-20260213-102500-0001",
    "echo '{\"source\": \"agent/x\", \"event\": \"Seen\", \"body\": \"Details\"}' | obsrepo new --json -"))
@options_of(Flags, FLAGS)
@options_of(New, NEW)
@output_format(help_text="text: the new file's path; json: its id, path and content hash (and commit and branch).")
@handled
def new(output_format: str, **options: Any) -> int:
    """Write one new observation and print its path.

    The id and the file name come from the timestamp and the content; nothing is written when
    the observation would break a rule (the problems are printed instead, exit 1) or repeats
    one already in the work tree. With --commit the file goes into one new commit on a proposal
    branch instead (checked against the branch), leaving the work tree as it is.
    """
    flags = Flags(**values_of(Flags, FLAGS, options))
    if flags.json is not None:
        front, body = read_json_input(flags.json, "json")
    else:
        front, body = _front_from_flags(flags)
        if body == "-":
            body = read_text("-", "body")
    writer = Binding.of(front["tenant"] if flags.tenant and flags.json is None else None)  # --tenant binds the writer
    request = New(front, body, **values_of(New, NEW, options))
    text = render_written(run(Session(os.getcwd(), binding=writer), request), output_format)
    if text is not None:
        click.echo(text)
    return errors.EXIT_OK


def _front_from_flags(flags: Flags) -> tuple[dict[str, Any], str]:
    for required in ("source", "event"):
        if not getattr(flags, required):
            raise UsageError(f"--{required} is required (or give --json)", parameter=f"--{required}")
    front: dict[str, Any] = {"source": flags.source, "event": flags.event}
    if flags.timestamp is not None:
        front["timestamp"] = option_timestamp(flags.timestamp, "timestamp")
    for key in ("type", "entity", "priority", "specificity", "classification", "source_ref", "interpretation", "trace_ref"):
        if getattr(flags, key) is not None:
            front[key] = getattr(flags, key)
    if flags.specificity is not None and not math.isfinite(flags.specificity):
        raise UsageError("--specificity must be a finite number", parameter="--specificity")
    if flags.scope:
        front["scope"] = list(flags.scope)
    if flags.fields:
        front["fields"] = dict(parse_field(f, "field") for f in flags.fields)
    for key in ("corrects", "retracts"):
        if getattr(flags, key):
            front[key] = list(getattr(flags, key))
    if flags.relations:
        pairs = [r.partition("=") for r in flags.relations]
        if any(not sep for _, sep, _ in pairs):
            raise UsageError("--relation expects TYPE=TARGET", parameter="--relation")
        front["relations"] = [{"type": t, "target": target} for t, _, target in pairs]
    if flags.tenant:
        front["tenant"] = Binding.parse(flags.tenant, "tenant").as_dict()
    if flags.data is not None:
        front["data"] = parse_field(f"data={flags.data}", "data")[1]
    return front, flags.body or ""
