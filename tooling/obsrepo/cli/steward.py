"""Commands of stewardship and beliefs (docs/design.md §14): feedback, reclassify, retention,
export, comprehend, comprehensions. Arguments → one library call → render → exit code."""

from __future__ import annotations

import sys
from typing import Any

import click

from .. import errors
from ..ops import Comprehend, Comprehensions, Export, Feedback, Query, Reclassify, Retention, Session, destination, run
from ..ops.surface import CLASSIFICATIONS, CONFIDENCES, FEEDBACK_OUTCOMES, plural
from .app import main
from .declare import flag, options_of, values_of
from .errors import _emit_json, handled
from .options import _progress_bar, examples, json_or_text, read_options, read_session
from .write import branch_option, commit_option, render_written, write_options, writer


@main.command(epilog=examples("obsrepo feedback obs-20260213-102500-0001 --outcome accepted --session s-42",
                              "obsrepo feedback obs-20260213-102500-0001 --outcome misleading --commit --format json"))
@click.argument("observation_id", metavar="OBS_ID")
@click.option("--outcome", type=click.Choice(FEEDBACK_OUTCOMES), required=True,
              help="How the observation served: accepted raises its weight, the others lower it.")
@click.option("--session", help="The session the outcome comes from.")
@write_options
@handled
def feedback(observation_id: str, outcome: str, session: str | None, as_commit: bool, branch: str | None,
             source: str | None, tenant: str | None, output_format: str) -> int:
    """Write a feedback observation on OBS_ID (work tree, or a commit with --commit).

    The index folds feedback into a weight per observation (an exponential moving average,
    starting at 1.0) that ranks `query --text`. The feedback is in your tenant, else the target's.
    """
    request = Feedback(observation_id, outcome, session, source, None, destination(as_commit, branch))
    return render_written(run(writer(tenant), request), output_format)


@main.command(epilog=examples("obsrepo reclassify obs-20260213-102500-0001 --to restricted",
                              'obsrepo reclassify obs-1 obs-2 --to confidential --reason "holds a customer\'s card number" --commit'))
@click.argument("ids", nargs=-1, required=True, metavar="IDS...")
@click.option("--to", "classification", type=click.Choice(CLASSIFICATIONS), required=True, help="The new level.")
@click.option("--reason", help="Why (the new document's body).")
@write_options
@handled
def reclassify(ids: tuple[str, ...], classification: str, reason: str | None, as_commit: bool, branch: str | None,
               source: str | None, tenant: str | None, output_format: str) -> int:
    """Raise the classification of IDS with a new reclassify observation.

    Classifications only go up: the effective level is the most restrictive of the declared
    one, the content rules and every reclassify document.
    """
    request = Reclassify(tuple(ids), classification, reason, source, destination(as_commit, branch))
    return render_written(run(writer(tenant), request), output_format)


@main.command(epilog=examples("obsrepo retention", "obsrepo retention --at v1.2 --format json"))
@click.option("--at", metavar="REV", help="The repository as it was at REV.")
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many of each list (1..1000).")
@json_or_text
@read_options
@handled
@read_session
def retention(at: str | None, limit: int, output_format: str, door: Session) -> int:
    """What schemas/retention.yaml has expired at REV, and what expires next.

    An observation expires when the commit's committer time reaches its timestamp plus the
    shortest ttl among the policies that match its type or effective classification.
    """
    result = run(door, Retention(at, limit)).to_json()
    if output_format == "json":
        _emit_json(result)
        return errors.EXIT_OK
    policies = ", ".join(f"{p['type'] or '*'}/{p['classification'] or '*'} {p['ttl']}" for p in result["policies"]) or "none"
    click.echo(f"at {result['at_commit'][:12]} ({result['committed_at']}); policies: {policies}")
    for key, label in (("expired", "expired"), ("upcoming", "expires next")):
        click.echo(f"{label}: {result[f'total_{key}']}")
        for item in result[key]:
            click.echo(f"  {item['expires_at']}  {item['id']}  {item['type'] or '-'}  {item['classification']}")
    return errors.EXIT_OK


# the filters of `query` that export takes: no paging, order or ranking (it writes every match, oldest first)
EXPORTED = {"scopes": "--scope", "text": flag("--text", help_text="Only observations matching these words (BM25)."),
            **dict.fromkeys(("limit", "offset", "order", "unweighted", "overlay", "match", "alpha", "fusion", "semantic_k",
                             "embedding"))}


@main.command(epilog=examples("obsrepo export --format csv --output observations.csv",
                              "obsrepo export --tenant org=northwind --max-classification internal --format jsonl > out.jsonl",
                              "obsrepo export --after 2026-01-01 --format parquet --output lake/observations"))
@options_of(Query, EXPORTED)
@click.option("--format", "output_format", type=click.Choice(["jsonl", "csv", "markdown", "parquet"]), default="jsonl",
              show_default=True, help="jsonl, csv (a header row), markdown (a table), parquet (a folder, year=/month=).")
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


@main.command(epilog=examples(
    "obsrepo comprehend comp-acme-payments --observation obs-20260213-102500-0001 --effect confirm",
    'obsrepo comprehend comp-acme-payments --observation obs-2 --effect contradict --statement "Acme pays late"'))
@click.argument("comprehension_id", metavar="COMP_ID")
@click.option("--observation", required=True, metavar="OBS_ID", help="The observation that bears on the belief.")
@click.option("--effect", type=click.Choice(["confirm", "contradict", "neutral"]), required=True,
              help="What it does to the belief.")
@click.option("--statement", help="The belief as it now stands (required to contradict).")
@click.option("--reasoning", help="Why (default: which observation changed the confidence, from what to what).")
@commit_option
@branch_option
@click.option("--tenant", metavar="org=…[,project=…]", help="Cite only observations of this tenant (or OBSREPO_TENANT).")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: path, version and confidence (and commit); json: the same as an object.")
@handled
def comprehend(comprehension_id: str, observation: str, effect: str, statement: str | None, reasoning: str | None,
               as_commit: bool, branch: str | None, tenant: str | None, output_format: str) -> int:
    """Write the next version of comprehension COMP_ID after one more observation.

    Confidence moves by one step: unknown→low (confirm or contradict), low→medium (confirm),
    medium→high (confirm) or →low (contradict), high→medium (contradict); otherwise it stays.
    Nothing is written when the observation is already cited. With --commit the version at the
    proposal branch's tip (else HEAD) gets the update, as one commit on that branch.
    """
    request = Comprehend(comprehension_id, observation, effect, statement, reasoning, destination(as_commit, branch))
    updated = run(writer(tenant), request).to_json()
    if output_format == "json":
        _emit_json(updated)
    elif updated["changed"]:
        where = f" (commit {updated['commit'][:12]} on {updated['branch']})" if updated.get("commit") else ""
        click.echo(f"{updated['path']}: version {updated['version']}, confidence {updated['previous_confidence']} → "
                   f"{updated['confidence']}{where}")
    else:
        click.echo(f"{updated['path']}: already cites {observation}; unchanged (version {updated['version']})")
    return errors.EXIT_OK


@main.command(epilog=examples("obsrepo comprehensions", "obsrepo comprehensions --domain customers/acme-corp --confidence high",
                              'obsrepo comprehensions --text "payment terms" --format json'))
@click.option("--domain", help="Only this domain.")
@click.option("--confidence", type=click.Choice(CONFIDENCES), help="Only beliefs held with this confidence.")
@click.option("--text", metavar="WORDS", help="Only beliefs whose topic, statements or body hold every word.")
@click.option("--limit", type=int, default=50, show_default=True, help="At most this many (1..1000).")
@click.option("--offset", type=int, default=0, help="Skip this many first.")
@json_or_text
@read_options
@handled
@read_session
def comprehensions(domain: str | None, confidence: str | None, text: str | None, limit: int, offset: int,
                   output_format: str, door: Session) -> int:
    """Beliefs (comprehension documents) of the indexed commit, by id."""
    result = run(door, Comprehensions(domain, confidence, text, limit, offset)).to_json()
    if output_format == "json":
        _emit_json(result)
    elif not result["comprehensions"]:
        click.echo("No comprehensions found.")
    else:
        for item in result["comprehensions"]:
            click.echo(f"{item['id']} v{item['version']} [{item['confidence']}] {item['domain']}: {item['statement']}")
    return errors.EXIT_OK
