"""The statements of stewardship: correct, retract, relate, merge (feedback and reclassify live
in steward.py). Each writes one new file into the work tree (like `new`), or with --commit one
new commit on a proposal branch."""

from __future__ import annotations

import os
from collections.abc import Callable

import click

from .. import errors
from ..ops import Answer, Binding, Correct, Merge, Relate, Retract, Session, destination, run
from ..ops.surface import parse_field
from .app import main
from .declare import offered, options_of
from .errors import _emit_json, handled
from .options import FORMATS, examples

commit_option = click.option("--commit", "as_commit", is_flag=True,
                             help="Commit on a proposal branch instead of writing into the work tree.")
branch_option = click.option("--branch", metavar="BRANCH",
                             help="The proposal branch for --commit (default obsrepo/proposals, made from HEAD when missing).")


def write_options(func: Callable) -> Callable:
    """--commit, --branch, --source, --tenant and --format, shared by every statement."""
    for option in reversed((
        commit_option,
        branch_option,
        click.option("--source", help="Who makes the statement (default human/<your git user name>)."),
        click.option("--tenant", metavar="org=…[,project=…]",
                     help="Write as this tenant and see only its observations (or OBSREPO_TENANT)."),
        click.option("--format", "output_format", type=FORMATS, default="text", show_default=True,
                     help="text: the new file's path (and commit); json: id, path, content hash (commit, branch)."),
    )):
        func = option(func)
    return func


def writer(tenant: str | None) -> Session:
    """The door for a write: --tenant (else OBSREPO_TENANT) binds the writer."""
    return Session(os.getcwd(), binding=Binding.configured(tenant, "tenant"))


def render_written(answer: Answer, output_format: str) -> int:
    result = answer.to_json()
    if output_format == "json":
        _emit_json(result)
    elif result.get("commit"):
        click.echo(f"{result['path']} (commit {result['commit'][:12]} on {result['branch']})")
    else:
        click.echo(result["path"])
    return errors.EXIT_OK


@main.command(epilog=examples('obsrepo correct company/acme phone "+44 20 7946 0000" --reason "Typo in the area code"',
                              'obsrepo correct invoice/inv-2041 total 1350 --reason "Credit note" --commit'))
@click.argument("entity")
@click.argument("field")
@click.argument("value")
@click.option("--reason", required=True, help="Why the value is wrong (one line; it goes into the event).")
@click.option("--allow-type-change", is_flag=True,
              help="Accept a VALUE of another JSON type than the field's current value (a number as text, say).")
@options_of(Correct, offered(Correct, "valid_from", "valid_until"))
@write_options
@handled
def correct(entity: str, field: str, value: str, reason: str, allow_type_change: bool, valid_from: str | None,
            valid_until: str | None, as_commit: bool, branch: str | None, source: str | None, tenant: str | None,
            output_format: str) -> int:
    """Correct a field's value: a new observation that corrects the winning one.

    VALUE is JSON when it parses (1350, true, null, ["a"]), else the text as written; write
    '"1350"' for the text 1350. The correction has priority 1000 and names the observation that
    currently wins the field (at the proposal branch's tip with --commit, else at HEAD). A VALUE
    whose JSON type (string, number, boolean, array, object) differs from the current value's
    is refused (VALIDATION_ERROR, rule type-change, exit 1) unless --allow-type-change; null,
    which clears the field, always passes.
    """
    parsed = parse_field(f"{field}={value}", "value")[1]
    request = Correct(entity, field, parsed, reason, source, allow_type_change, destination(as_commit, branch),
                      valid_from=valid_from, valid_until=valid_until)
    return render_written(run(writer(tenant), request), output_format)


@main.command(epilog=examples('obsrepo retract obs-20260213-102500-0001 --reason "Recorded for the wrong company"',
                              'obsrepo retract obs-20260213-102500-0001 --reason "Duplicate" --commit --branch proposals/cleanup'))
@click.argument("obs_id", metavar="OBS_ID")
@click.option("--reason", required=True, help="Why it is withdrawn (one line; it goes into the event).")
@write_options
@handled
def retract(obs_id: str, reason: str, as_commit: bool, branch: str | None, source: str | None, tenant: str | None,
            output_format: str) -> int:
    """Withdraw an observation from queries and snapshots (the file stays in history)."""
    request = Retract(obs_id, reason, source, destination(as_commit, branch))
    return render_written(run(writer(tenant), request), output_format)


@main.command(epilog=examples("obsrepo relate invoice/inv-2041 PART_OF company/acme",
                              "obsrepo relate task/44 DEPENDS_ON task/42 --commit --format json"))
@click.argument("source_entity", metavar="SOURCE")
@click.argument("relation_type", metavar="TYPE")
@click.argument("target", metavar="TARGET")
@write_options
@handled
def relate(source_entity: str, relation_type: str, target: str, as_commit: bool, branch: str | None, source: str | None,
           tenant: str | None, output_format: str) -> int:
    """Record a relation from SOURCE to TARGET, e.g. PART_OF or DEPENDS_ON.

    TYPE is PART_OF, CORRECTS, REFERS_TO, SETTLES, DUPLICATE_OF, DEPENDS_ON, SUPERSEDES or your
    own UPPER_SNAKE_CASE name. TARGET must be an entity with observations; PART_OF and
    DEPENDS_ON may not close a cycle.
    """
    request = Relate(source_entity, relation_type, target, source, destination(as_commit, branch))
    return render_written(run(writer(tenant), request), output_format)


@main.command(epilog=examples('obsrepo merge company/acme-corp company/acme --reason "Same company, two spellings"',
                              'obsrepo merge person/j-smith person/jane-smith --reason "Same person" --commit'))
@click.argument("from_entity", metavar="FROM")
@click.argument("into_entity", metavar="INTO")
@click.option("--reason", required=True, help="Why they are the same (one line; it goes into the event).")
@write_options
@handled
def merge(from_entity: str, into_entity: str, reason: str, as_commit: bool, branch: str | None, source: str | None,
          tenant: str | None, output_format: str) -> int:
    """Merge FROM into INTO: FROM's observations count for INTO from then on.

    An entity is merged at most once (ENTITY_ALREADY_MERGED); merges may not form a cycle.
    """
    request = Merge(from_entity, into_entity, reason, source, destination(as_commit, branch))
    return render_written(run(writer(tenant), request), output_format)
