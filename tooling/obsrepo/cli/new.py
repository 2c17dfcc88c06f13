"""`obsrepo new`: one new observation, from flags (the document's own fields) or a JSON object;
its period and where it goes (--commit, --branch) are declared by its request (declare.py)."""

from __future__ import annotations

import math
import os
from typing import Any

import click

from .. import errors
from ..errors import UsageError
from ..ops import Binding, New, Session, run
from ..ops.surface import CLASSIFICATIONS, DEFAULT_CLASSIFICATION, option_timestamp, parse_field, read_json_input, read_text
from .app import main
from .declare import options_of, values_of
from .errors import handled
from .options import FORMATS, examples
from .write import DESTINATION, render_written

# what new takes of its request besides the front matter and body its flags build: the
# period, and --commit and --branch
NEW = {"front": None, "body": None, "tool": None, "destination": DESTINATION}


@main.command(epilog=examples(
    'obsrepo new --source agent/crm --event "Invoice INV-2041 issued" --type invoice.issued \\',
    "    --entity invoice/inv-2041 --field total=1250 --field currency=EUR --scope company/acme",
    'obsrepo new --source human/alice --event "Phone number fixed" --entity company/acme \\',
    "    --field phone=+4420 --corrects obs-20260213-102500-0001",
    "echo '{\"source\": \"agent/x\", \"event\": \"Seen\", \"body\": \"Details\"}' | obsrepo new --json -"))
@click.option("--json", "json_input", metavar="FILE", help="Read a JSON object (front matter + optional body) from FILE, or - for stdin.")
@click.option("--source", help="Who observed: agent/x, agent:x, plugin:telegram, human/alice …")
@click.option("--event", help="One line: what was observed.")
@click.option("--type", "type_", help="Event kind, e.g. task.updated.")
@click.option("--timestamp", help="ISO 8601 with a timezone, or a date meaning midnight UTC (default: now).")
@click.option("--scope", multiple=True, help="A scope id (repeatable).")
@options_of(New, NEW)
@click.option("--entity", help="The entity the facts are about: <type>/<key>.")
@click.option("--field", "fields", multiple=True, metavar="KEY=VALUE",
              help="A fact about --entity (repeatable; VALUE is JSON when it parses, else text).")
@click.option("--priority", type=int, help="Source priority: 0 AI extraction, 100 structured (default), 1000 a correction.")
@click.option("--specificity", type=float, help="0..1: breaks ties between values of equal priority (default 0).")
@click.option("--corrects", multiple=True, metavar="ID", help="The observation this one corrects (repeatable; priority 1000).")
@click.option("--retracts", multiple=True, metavar="ID", help="The observation this one withdraws (repeatable).")
@click.option("--relation", "relations", multiple=True, metavar="TYPE=TARGET", help="e.g. PART_OF=company/acme (repeatable).")
@click.option("--tenant", metavar="org=…,project=…",
              help="Ownership: org, project, agent, user; the write is judged on what this tenant can see.")
@click.option("--classification", type=click.Choice(CLASSIFICATIONS),
              help=f"Who may read it (default {DEFAULT_CLASSIFICATION}).")
@click.option("--source-ref", help="Where the observer found it: a URL, a message id, a file.")
@click.option("--interpretation", help="How the observer read the source, in one line.")
@click.option("--trace-ref", help="The run or trace that produced it.")
@click.option("--data", metavar="JSON", help="Any JSON payload.")
@click.option("--body", help="Markdown body; - reads it from stdin.")
@click.option("--format", "output_format", type=FORMATS, default="text", show_default=True,
              help="text: the new file's path; json: its id, path and content hash (and commit and branch).")
@handled
def new(json_input: str | None, output_format: str, **options: Any) -> int:
    """Write one new observation and print its path.

    The id and the file name come from the timestamp and the content; nothing is written when
    the observation would break a rule (the problems are printed instead, exit 1) or repeats
    one already in the work tree. With --commit the file goes into one new commit on a proposal
    branch instead (checked against the branch), leaving the work tree as it is.
    """
    if json_input is not None:
        front, body = read_json_input(json_input, "json")
    else:
        front, body = _front_from_flags(options)
        if body == "-":
            body = read_text("-", "body")
    writer = Binding.of(front["tenant"] if options["tenant"] and json_input is None else None)  # --tenant binds the writer
    request = New(front, body, **values_of(New, NEW, options))
    text = render_written(run(Session(os.getcwd(), binding=writer), request), output_format)
    if text is not None:
        click.echo(text)
    return errors.EXIT_OK


def _front_from_flags(options: dict[str, Any]) -> tuple[dict[str, Any], str]:
    for required in ("source", "event"):
        if not options.get(required):
            raise UsageError(f"--{required} is required (or give --json)", parameter=f"--{required}")
    front: dict[str, Any] = {"source": options["source"], "event": options["event"]}
    if options.get("timestamp") is not None:
        front["timestamp"] = option_timestamp(options["timestamp"], "timestamp")
    simple = {"type_": "type", "entity": "entity", "priority": "priority",
              "specificity": "specificity", "classification": "classification", "source_ref": "source_ref",
              "interpretation": "interpretation", "trace_ref": "trace_ref"}
    for option, key in simple.items():
        if options.get(option) is not None:
            front[key] = options[option]
    if options.get("specificity") is not None and not math.isfinite(options["specificity"]):
        raise UsageError("--specificity must be a finite number", parameter="--specificity")
    if options["scope"]:
        front["scope"] = list(options["scope"])
    if options["fields"]:
        front["fields"] = dict(parse_field(f, "field") for f in options["fields"])
    for key in ("corrects", "retracts"):
        if options[key]:
            front[key] = list(options[key])
    if options["relations"]:
        pairs = [r.partition("=") for r in options["relations"]]
        if any(not sep for _, sep, _ in pairs):
            raise UsageError("--relation expects TYPE=TARGET", parameter="--relation")
        front["relations"] = [{"type": t, "target": target} for t, _, target in pairs]
    if options["tenant"]:
        front["tenant"] = Binding.parse(options["tenant"], "tenant").as_dict()
    if options["data"] is not None:
        front["data"] = parse_field(f"data={options['data']}", "data")[1]
    return front, options.get("body") or ""

