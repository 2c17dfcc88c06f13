"""Write operations: each adds one new document (docs/design.md §11), into the work tree or as
one new commit on a proposal branch (`destination`), judged on what the writer's tenant can
see (§8a). Nothing is ever edited in place. Writes of one process run one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from ..format.vocabulary import CLASSIFICATIONS, COMPREHENSION_EFFECTS, COMPREHENSION_ID, DEFAULT_CLASSIFICATION, FEEDBACK_OUTCOMES
from .fields import EntityId, Field, Reason, Source, moment, text_field
from .registry import Answer, operation
from .session import Session
from .values import Destination, ProposalBranch, WorkTree

MAX_BODY = 1024 * 1024  # characters of a body (a document's own bound is 1 MiB)
MAX_VALUE = 64 * 1024  # characters of a corrected text value
ObservationId = Annotated[str, text_field("An observation id (obs-…).", 128)]
JsonValue = str | int | float | bool | None | list[Any] | dict[str, Any]


ValidFrom = Annotated[str | int | None, moment(
    "Valid time: the facts hold from this instant (default: the observation's timestamp)")]
ValidUntil = Annotated[str | int | None, moment("Valid time: the facts hold until this instant, excluded (default: open)")]


def with_period(front: dict[str, Any], valid_from: str | int | None, valid_until: str | int | None) -> dict[str, Any]:
    """`front` with `valid: {from, until}` of the given ends (UTC, `Z`); unchanged when none is
    given. A period written both in `front` and as options is refused: say it once."""
    if valid_from is None and valid_until is None:
        return front
    from ..errors import UsageError
    from .values import Moment

    if "valid" in front:
        raise UsageError("the period is given twice: write `valid` in the observation or give valid_from/valid_until",
                         parameter="valid_from" if valid_from is not None else "valid_until")
    period = {name: Moment.parse(given, field).iso() for name, field, given in
              (("from", "valid_from", valid_from), ("until", "valid_until", valid_until)) if given is not None}
    return {**front, "valid": period}


class Written(Answer):
    """{id, path, content_hash} and, for a commit, {commit, branch}."""


def _proposal(destination: Destination) -> ProposalBranch | None:
    return destination if isinstance(destination, ProposalBranch) else None


def write(session: Session, front: dict[str, Any], body: str, destination: Destination, tool: str) -> Written:
    """One new observation, stamped with the writer's tenant, where `destination` says."""
    from ..write.statements import stamp_tenant

    binding = session.binding.as_dict()
    front = stamp_tenant(front, binding)
    if isinstance(destination, ProposalBranch):
        from ..write.proposal import propose

        with session.writing:
            return Written(propose(session.git, session.tree_states(), front, body,
                                   branch=session.branch_of(destination), tool=tool).as_dict())
    from ..write.new import create

    return Written(create(session.git, front, body, binding=binding).as_dict())


@dataclass(frozen=True)
class New:
    """One new observation from its front matter (without `spec` and `id`) and body."""

    front: Annotated[dict[str, Any], Field(
        "The front matter of an observation/v1 document as a JSON object, without `spec` and `id`: `source` (who "
        "observed: agent/x, human/alice …) and `event` (one line) are required; `timestamp` (ISO 8601 with a timezone) "
        "defaults to now; also `type`, `scope`, `entity`, `fields`, `priority`, `specificity`, `corrects`, `retracts`, "
        "`relations`, `valid` ({from, until}: the period the facts hold), `tenant`, `classification`, `source_ref`, "
        "`interpretation`, `trace_ref`, `data`, `x-…` extensions.",
        min_properties=1, max_properties=64)]
    body: Annotated[str, Field("The Markdown body (may be empty).", max_length=MAX_BODY)] = ""
    destination: Destination = WorkTree()
    tool: str = "new"
    valid_from: ValidFrom = None
    valid_until: ValidUntil = None


@dataclass(frozen=True)
class Flags:
    """`New.front` given one key at a time, as the command line gives it (the JSON object's
    keys, a relation as TYPE=TARGET, a field as KEY=VALUE): `front_of` makes the object."""

    json: Annotated[str | None, Field("Read a JSON object (front matter + optional body) from this file, or - for stdin.",
                                      placeholder="FILE")] = None
    source: Annotated[str | None, Field("Who observed: agent/x, agent:x, plugin:telegram, human/alice …")] = None
    event: Annotated[str | None, Field("One line: what was observed.")] = None
    type: Annotated[str | None, Field("Event kind, e.g. task.updated.")] = None
    timestamp: Annotated[str | None, Field("ISO 8601 with a timezone, or a date meaning midnight UTC (default: now).")] = None
    scope: Annotated[tuple[str, ...], Field("A scope id.")] = ()
    entity: Annotated[str | None, Field("The entity the facts are about: <type>/<key>.")] = None
    fields: Annotated[tuple[str, ...], Field("A fact about `entity` (VALUE is JSON when it parses, else text).",
                                             placeholder="KEY=VALUE")] = ()
    priority: Annotated[int | None, Field("Source priority: 0 AI extraction, 100 structured (default), 1000 a correction.")] = None
    specificity: Annotated[float | None, Field("0..1: breaks ties between values of equal priority (default 0).")] = None
    corrects: Annotated[tuple[str, ...], Field("The observation this one corrects (priority 1000).", placeholder="ID")] = ()
    retracts: Annotated[tuple[str, ...], Field("The observation this one withdraws.", placeholder="ID")] = ()
    relations: Annotated[tuple[str, ...], Field("e.g. PART_OF=company/acme.", placeholder="TYPE=TARGET")] = ()
    tenant: Annotated[str | None, Field("Ownership: org, project, agent, user; the write is judged on what this tenant can see.",
                                        placeholder="org=…,project=…")] = None
    classification: Annotated[str | None, Field(f"Who may read it (default {DEFAULT_CLASSIFICATION}).", choices=CLASSIFICATIONS)] = None
    source_ref: Annotated[str | None, Field("Where the observer found it: a URL, a message id, a file.")] = None
    interpretation: Annotated[str | None, Field("How the observer read the source, in one line.")] = None
    trace_ref: Annotated[str | None, Field("The run or trace that produced it.")] = None
    data: Annotated[str | None, Field("Any JSON payload.", placeholder="JSON")] = None
    body: Annotated[str | None, Field("Markdown body; - reads it from stdin.")] = None


@operation("new", "writes")
def new(session: Session, request: New) -> Written:
    front = with_period(request.front, request.valid_from, request.valid_until)
    return write(session, front, request.body, request.destination, request.tool)


@dataclass(frozen=True)
class Correct:
    entity: EntityId
    field: Annotated[str, text_field("The field of the entity's snapshot to correct.", 256)]
    value: Annotated[JsonValue, Field("The right value, of the field's current JSON type (a number as a number, not as "
                                      "text); null clears the field.", max_length=MAX_VALUE)]
    reason: Reason
    source: Source = None
    allow_type_change: Annotated[bool, Field("Accept a value of another JSON type than the field's current value.")] = False
    destination: Destination = ProposalBranch()
    valid_from: ValidFrom = None
    valid_until: ValidUntil = None


@operation("correct", "writes")
def correct(session: Session, request: Correct) -> Written:
    """A priority-1000 observation that `corrects` the observation winning the field, read at
    the proposal branch's tip when it exists (earlier proposals count), else at HEAD. A value of
    another JSON type than the current one is refused (rule `type-change`) unless allowed."""
    from ..read.snapshots import provenance
    from ..write.statements import correction, refuse_type_change, target_tenant

    proposal = _proposal(request.destination)
    with session.writing:
        at = session.rev(session.statement_base(proposal), "at")
        found = session.read(lambda scope: provenance(scope, request.entity, request.field), at)
        if not request.allow_type_change:
            refuse_type_change(request.entity, request.field, found["value"], request.value)
        winner = found["observation_id"]
        winner = winner[0] if isinstance(winner, list) else winner
        documents = session.documents(proposal)
        tenant = target_tenant(documents, winner, session.binding.as_dict())
        front = correction(request.entity, request.field, request.value, winner, tenant, reason=request.reason,
                           source=request.source or session.default_source(),
                           winner_timestamp=documents.by_id[winner].get("timestamp"))
        front = with_period(front, request.valid_from, request.valid_until)
        return write(session, front, "", request.destination, "correct")


@dataclass(frozen=True)
class Retract:
    observation_id: Annotated[str, text_field("An observation id, e.g. obs-20260213-102500-0001.", 96)]
    reason: Reason
    source: Source = None
    destination: Destination = ProposalBranch()


@operation("retract", "writes")
def retract(session: Session, request: Retract) -> Written:
    """Withdraw an observation from queries and snapshots: a new observation that `retracts` it."""
    from ..write.statements import retraction, target_tenant

    proposal = _proposal(request.destination)
    with session.writing:
        session.statement_base(proposal)  # GIT_ERROR before the first commit, whatever the destination
        tenant = target_tenant(session.documents(proposal), request.observation_id,
                               session.binding.as_dict())
        front = retraction(request.observation_id, tenant, reason=request.reason,
                           source=request.source or session.default_source())
        return write(session, front, "", request.destination, "retract")


@dataclass(frozen=True)
class Relate:
    source_entity: EntityId
    type: Annotated[str, text_field("PART_OF, DEPENDS_ON, REFERS_TO, SETTLES, SUPERSEDES … or your own UPPER_SNAKE_CASE name.", 64)]
    target: EntityId
    source: Source = None
    destination: Destination = ProposalBranch()


@operation("relate", "writes")
def relate(session: Session, request: Relate) -> Written:
    """A relation SOURCE —TYPE→ TARGET (PART_OF, DEPENDS_ON, REFERS_TO, … or your own UPPER_SNAKE)."""
    from ..write.statements import relation

    front = relation(request.source_entity, request.type, request.target, source=request.source or session.default_source())
    return write(session, front, "", request.destination, "relate")


@dataclass(frozen=True)
class Merge:
    from_entity: EntityId
    into_entity: EntityId
    reason: Reason
    source: Source = None
    destination: Destination = ProposalBranch()


@operation("merge", "writes")
def merge(session: Session, request: Merge) -> Written:
    """Merge FROM into INTO (DUPLICATE_OF): FROM's observations count for INTO from then on."""
    from ..write.statements import merge as merged

    front = merged(request.from_entity, request.into_entity, reason=request.reason,
                   source=request.source or session.default_source())
    return write(session, front, "", request.destination, "merge")


@dataclass(frozen=True)
class Feedback:
    target: ObservationId
    outcome: Annotated[str, Field("accepted raises the observation's weight; rejected, rework and misleading lower it.",
                                  choices=FEEDBACK_OUTCOMES)]
    session: Annotated[str | None, text_field("The session the outcome comes from (kept in the weight's history).", 256)] = None
    source: Source = None
    timestamp: str | None = None
    destination: Destination = ProposalBranch()


@operation("feedback", "writes")
def feedback(session: Session, request: Feedback) -> Written:
    """Feedback on an observation (accepted, rejected, rework, misleading), folded into its
    weight, in the writer's tenant (else the target's); the target is looked up where the
    write goes."""
    from ..write.statements import feedback as outcome

    front = outcome(session.documents(_proposal(request.destination)), request.target, request.outcome,
                    session.binding.as_dict(), session=request.session, source=request.source or session.default_source(),
                    timestamp=request.timestamp)
    return write(session, front, "", request.destination, "feedback")


@dataclass(frozen=True)
class Reclassify:
    targets: Annotated[tuple[Annotated[str, text_field("", 128)], ...],
                       Field("The observations to raise (ids, obs-…).", max_items=1000)]
    classification: Annotated[str, Field("The new level (classifications only go up).", choices=CLASSIFICATIONS)]
    reason: Annotated[str | None, text_field("Why (the new document's body).", 2000)] = None
    source: Source = None
    destination: Destination = ProposalBranch()


@operation("reclassify", "writes")
def reclassify(session: Session, request: Reclassify) -> Written:
    """Raise the classification of observations (one tenant's); `reason` is the body."""
    from ..write.statements import reclassification

    front = reclassification(session.documents(_proposal(request.destination)), list(request.targets),
                             request.classification, session.binding.as_dict(),
                             source=request.source or session.default_source())
    return write(session, front, request.reason or "", request.destination, "reclassify")


@dataclass(frozen=True)
class Comprehend:
    comprehension_id: Annotated[str, Field("The comprehension document's id (comp-…).", min_length=1, max_length=128,
                                           pattern=COMPREHENSION_ID)]
    observation: ObservationId
    effect: Annotated[str, Field("What the observation does to the belief.", choices=COMPREHENSION_EFFECTS)]
    statement: Annotated[str | None, text_field("The belief as it now stands (required to contradict).", 2000)] = None
    reasoning: Annotated[str | None, text_field("Why (default: which observation changed the confidence, from what to what).",
                                                2000)] = None
    destination: Destination = ProposalBranch()


class Belief(Answer):
    """{id, path, version, previous_confidence, confidence, changed} (and commit, branch)."""


@operation("comprehend", "writes")
def comprehend(session: Session, request: Comprehend) -> Belief:
    """The next version of a comprehension document after an observation (confirm, contradict,
    neutral); `changed` is False when the observation was already cited (nothing written)."""
    from ..write.comprehend import Belief as Edit
    from ..write.comprehend import comprehend as in_work_tree
    from ..write.comprehend import comprehend_commit

    belief = Edit(request.comprehension_id, request.observation, request.effect, request.statement, request.reasoning)
    binding = session.binding.as_dict()
    if isinstance(request.destination, ProposalBranch):
        with session.writing:
            return Belief(comprehend_commit(session.git, session.tree_states(), belief, tenant=binding,
                                            branch=session.branch_of(request.destination)))
    belief.check()
    return Belief(in_work_tree(session.root, session.documents(None), belief, tenant=binding).as_dict())
