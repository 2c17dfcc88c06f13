"""The statements of stewardship: correct, retract, relate, merge (feedback and reclassify live
in steward.py). Each writes one new file into the work tree (like `new`), or with --commit one
new commit on a proposal branch; each is declared by its request (declare.py)."""

from __future__ import annotations

from typing import Any

import click

from ..ops import Answer, Correct, Merge, Relate, Retract, destination
from ..ops.surface import parse_field
from .declare import Composed, Names, Spelling, argument, command, required
from .errors import _emit_json
from .options import output_format, tenant_for

commit_option = click.option("--commit", "as_commit", is_flag=True,
                             help="Commit on a proposal branch instead of writing into the work tree.")
branch_option = click.option("--branch", metavar="BRANCH",
                             help="The proposal branch for --commit (default obsrepo/proposals, made from HEAD when missing).")
# a statement's `destination`: the work tree, or with --commit a proposal branch
DESTINATION = Composed((commit_option, branch_option), lambda as_commit, branch: destination(as_commit, branch))
write_tenant = tenant_for("Write as this tenant and see only its observations (or OBSREPO_TENANT).")
written_format = output_format(help_text="text: the new file's path (and commit); json: id, path, content hash (commit, branch).")
WRITE_OPTIONS = (write_tenant, written_format)  # after the request's own and --commit, --branch


def statement(names: Names) -> dict[str, Any]:
    """A statement's `names`: `destination` from --commit and --branch, and the command's own."""
    return {"destination": DESTINATION, **names}


def render_written(answer: Answer, output_format: str) -> str | None:
    result = answer.to_json()
    if output_format == "json":
        _emit_json(result)
        return None
    if result.get("commit"):
        return f"{result['path']} (commit {result['commit'][:12]} on {result['branch']})"
    return str(result["path"])


def _json_or_text(text: str) -> Any:
    """correct's VALUE: JSON when it parses, else the text as written."""
    return parse_field(f"value={text}", "value")[1]


@command(Correct, names=statement({
    "value": Spelling(argument=True, convert=_json_or_text),
    "reason": required(help_text="Why the value is wrong (one line; it goes into the event)."),
    "allow_type_change": Spelling(help="Accept a VALUE of another JSON type than the field's current value (a number as "
                                       "text, say)."),
}), options=WRITE_OPTIONS, examples=('obsrepo correct company/acme phone "+44 20 7946 0000" --reason "Typo in the area code"',
                                     'obsrepo correct invoice/inv-2041 total 1350 --reason "Credit note" --commit'))
def correct(answer: Answer, output_format: str) -> str | None:
    """Correct a field's value: a new observation that corrects the winning one.

    VALUE is JSON when it parses (1350, true, null, ["a"]), else the text as written; write
    '"1350"' for the text 1350. The correction has priority 1000 and names the observation that
    currently wins the field (at the proposal branch's tip with --commit, else at HEAD). A VALUE
    whose JSON type (string, number, boolean, array, object) differs from the current value's
    is refused (VALIDATION_ERROR, rule type-change, exit 1) unless --allow-type-change; null,
    which clears the field, always passes.
    """
    return render_written(answer, output_format)


@command(Retract, names=statement({"observation_id": argument("OBS_ID"),
                                   "reason": required(help_text="Why it is withdrawn (one line; it goes into the event).")}),
         options=WRITE_OPTIONS,
         examples=('obsrepo retract obs-20260213-102500-0001 --reason "Recorded for the wrong company"',
                   'obsrepo retract obs-20260213-102500-0001 --reason "Duplicate" --commit --branch proposals/cleanup'))
def retract(answer: Answer, output_format: str) -> str | None:
    """Withdraw an observation from queries and snapshots (the file stays in history)."""
    return render_written(answer, output_format)


@command(Relate, names=statement({"source_entity": argument("SOURCE"), "type": argument("TYPE"),
                                  "target": argument("TARGET")}),
         options=WRITE_OPTIONS, examples=("obsrepo relate invoice/inv-2041 PART_OF company/acme",
                                          "obsrepo relate task/44 DEPENDS_ON task/42 --commit --format json"))
def relate(answer: Answer, output_format: str) -> str | None:
    """Record a relation from SOURCE to TARGET, e.g. PART_OF or DEPENDS_ON.

    TYPE is PART_OF, CORRECTS, REFERS_TO, SETTLES, DUPLICATE_OF, DEPENDS_ON, SUPERSEDES or your
    own UPPER_SNAKE_CASE name. TARGET must be an entity with observations; PART_OF and
    DEPENDS_ON may not close a cycle.
    """
    return render_written(answer, output_format)


@command(Merge, names=statement({"from_entity": argument("FROM"), "into_entity": argument("INTO"),
                                 "reason": required(help_text="Why they are the same (one line; it goes into the event).")}),
         options=WRITE_OPTIONS,
         examples=('obsrepo merge company/acme-corp company/acme --reason "Same company, two spellings"',
                   'obsrepo merge person/j-smith person/jane-smith --reason "Same person" --commit'))
def merge(answer: Answer, output_format: str) -> str | None:
    """Merge FROM into INTO: FROM's observations count for INTO from then on.

    An entity is merged at most once (ENTITY_ALREADY_MERGED); merges may not form a cycle.
    """
    return render_written(answer, output_format)
