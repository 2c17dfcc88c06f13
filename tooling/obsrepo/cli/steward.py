"""Commands of stewardship and beliefs (docs/design.md §14): feedback, reclassify, retention,
export, comprehend, comprehensions; each declared by its request (declare.py) but export, which
writes a stream."""

from __future__ import annotations

import sys
from typing import Any

import click

from .. import errors
from ..ops import Answer, Comprehend, Comprehensions, Export, Feedback, Query, Reclassify, Retention, Session, run
from ..ops.surface import plural
from .app import main
from .declare import argument, command, flag, options_of, required, values_of
from .errors import _emit_json, handled
from .options import _progress_bar, examples, json_or_text, output_format, read_options, read_session, tenant_for
from .write import DESTINATION, WRITE_OPTIONS, render_written, statement


@command(Feedback, names=statement({
    "target": argument("OBS_ID"), "timestamp": None,
    "outcome": required(help_text="How the observation served: accepted raises its weight, the others lower it.")}),
    options=WRITE_OPTIONS, examples=("obsrepo feedback obs-20260213-102500-0001 --outcome accepted --session s-42",
                                     "obsrepo feedback obs-20260213-102500-0001 --outcome misleading --commit --format json"))
def feedback(answer: Answer, output_format: str) -> str | None:
    """Write a feedback observation on OBS_ID (work tree, or a commit with --commit).

    The index folds feedback into a weight per observation (an exponential moving average,
    starting at 1.0) that ranks `query --text`. The feedback is in your tenant, else the target's.
    """
    return render_written(answer, output_format)


@command(Reclassify, names=statement({"targets": argument("IDS..."), "classification": required("--to")}),
         options=WRITE_OPTIONS,
         examples=("obsrepo reclassify obs-20260213-102500-0001 --to restricted",
                   'obsrepo reclassify obs-1 obs-2 --to confidential --reason "holds a customer\'s card number" --commit'))
def reclassify(answer: Answer, output_format: str) -> str | None:
    """Raise the classification of IDS with a new reclassify observation.

    Classifications only go up: the effective level is the most restrictive of the declared
    one, the content rules and every reclassify document.
    """
    return render_written(answer, output_format)


@command(Retention, options=(json_or_text, read_options),
         examples=("obsrepo retention", "obsrepo retention --at v1.2 --format json"))
def retention(answer: Answer, output_format: str) -> str | None:
    """What schemas/retention.yaml has expired at REV, and what expires next.

    An observation expires when the commit's committer time reaches its timestamp plus the
    shortest ttl among the policies that match its type or effective classification.
    """
    result = answer.to_json()
    if output_format == "json":
        _emit_json(result)
        return None
    policies = ", ".join(f"{p['type'] or '*'}/{p['classification'] or '*'} {p['ttl']}" for p in result["policies"]) or "none"
    lines = [f"at {result['at_commit'][:12]} ({result['committed_at']}); policies: {policies}"]
    for key, label in (("expired", "expired"), ("upcoming", "expires next")):
        lines.append(f"{label}: {result[f'total_{key}']}")
        lines += [f"  {item['expires_at']}  {item['id']}  {item['type'] or '-'}  {item['classification']}"
                  for item in result[key]]
    return "\n".join(lines)


# the filters of `query` that export takes: no paging, order or ranking (it writes every match, oldest first)
EXPORTED = {"scopes": "--scope", "text": flag("--text", help_text="Only observations matching these words (BM25)."),
            **dict.fromkeys(("limit", "offset", "order", "unweighted", "overlay", "match", "alpha", "fusion", "semantic_k",
                             "embedding"))}


@main.command(epilog=examples("obsrepo export --format csv --output observations.csv",
                              "obsrepo export --tenant org=northwind --max-classification internal --format jsonl > out.jsonl",
                              "obsrepo export --after 2026-01-01 --format parquet --output lake/observations"))
@options_of(Query, EXPORTED)
@output_format(choices=("jsonl", "csv", "markdown", "parquet"),
               help_text="jsonl, csv (a header row), markdown (a table), parquet (a folder, year=/month=).")
@click.option("--output", metavar="PATH", help="The file (a folder for parquet); default stdout.")
@read_options
@handled
@read_session
def export(output_format: str, output: str | None, door: Session, **filters: Any) -> int:
    """Write every matching observation to jsonl, csv, markdown or parquet.

    Matches what query would list with the same filters (no paging), oldest first.

    The tenant binding and the ceiling always apply. CSV columns start with id, agent,
    project, timestamp, classification, content_hash, feedback_weight, content.
    """
    query = Query(**values_of(Query, EXPORTED, filters))
    request = Export(query, output_format, output, out=sys.stdout.buffer, progress=_progress_bar("exporting"))
    try:
        result = run(door, request).to_json()
    except BrokenPipeError:  # `obsrepo export | head`: the reader has what it wanted
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return errors.EXIT_OK
    if output is not None:
        click.echo(f"{plural(result['count'], 'observation')} written to {output}", err=True)
    return errors.EXIT_OK


@command(Comprehend, names={
    "comprehension_id": argument("COMP_ID"), "destination": DESTINATION,
    "observation": required(metavar="OBS_ID", help_text="The observation that bears on the belief."),
    "effect": required(help_text="What it does to the belief.")},
    options=(tenant_for("Cite only observations of this tenant (or OBSREPO_TENANT)."),
             output_format(help_text="text: path, version and confidence (and commit); json: the same as an object.")),
    examples=("obsrepo comprehend comp-acme-payments --observation obs-20260213-102500-0001 --effect confirm",
              'obsrepo comprehend comp-acme-payments --observation obs-2 --effect contradict --statement "Acme pays late"'))
def comprehend(answer: Answer, output_format: str, request: Comprehend) -> str | None:
    """Write the next version of comprehension COMP_ID after one more observation.

    Confidence moves by one step: unknown→low (confirm or contradict), low→medium (confirm),
    medium→high (confirm) or →low (contradict), high→medium (contradict); otherwise it stays.
    Nothing is written when the observation is already cited. With --commit the version at the
    proposal branch's tip (else HEAD) gets the update, as one commit on that branch.
    """
    updated = answer.to_json()
    if output_format == "json":
        _emit_json(updated)
        return None
    if updated["changed"]:
        where = f" (commit {updated['commit'][:12]} on {updated['branch']})" if updated.get("commit") else ""
        return (f"{updated['path']}: version {updated['version']}, confidence {updated['previous_confidence']} → "
                f"{updated['confidence']}{where}")
    return f"{updated['path']}: already cites {request.observation}; unchanged (version {updated['version']})"


@command(Comprehensions, options=(json_or_text, read_options),
         examples=("obsrepo comprehensions", "obsrepo comprehensions --domain customers/acme-corp --confidence high",
                   'obsrepo comprehensions --text "payment terms" --format json'))
def comprehensions(answer: Answer, output_format: str) -> str | None:
    """Beliefs (comprehension documents) of the indexed commit, by id."""
    result = answer.to_json()
    if output_format == "json":
        _emit_json(result)
        return None
    if not result["comprehensions"]:
        return "No comprehensions found."
    return "\n".join(f"{item['id']} v{item['version']} [{item['confidence']}] {item['domain']}: {item['statement']}"
                     for item in result["comprehensions"])
