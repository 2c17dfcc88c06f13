"""The JSON of the reads' answers, declared once as typed dictionaries (docs/design.md §9).

A response class names its shape (`QueryPage.shape = Page`); its `to_json()` is a value of
that type. From the shapes come the JSON Schemas the MCP tools declare as `outputSchema`
(`output_schema`) and the generated list of §9 (`shapes_markdown`, kept fresh by a test that
also validates real answers against the schemas). A key that is not always there is
`NotRequired`; a value that may be null says `| None`; a value whose form is the data's own
(a field's value, `data`, a snapshot) is `Any`.

Nothing here imports pydantic at import time (the command line starts without it). The
annotations are evaluated (no `from __future__ import annotations`): a `NotRequired` is seen
only so.
"""

from typing import Any, NotRequired

from typing_extensions import TypedDict  # pydantic reads the TypedDicts of typing_extensions before Python 3.12

JsonSchema = dict[str, Any]


class Record(TypedDict):
    """One observation as `query` lists it."""

    id: str
    timestamp: str
    type: str | None
    source: str
    event: str
    body: str
    scope: list[str]
    entity: str | None
    fields: dict[str, Any] | None
    priority: int
    specificity: float
    tenant: dict[str, str] | None
    classification: str
    data: Any
    context: Any
    trace_ref: str | None
    path: str
    commit: str | None
    score: NotRequired[float]  # with `text`
    weight: NotRequired[float]  # with `text`: the feedback weight that ranked it
    uncommitted: NotRequired[bool]  # a running watcher's draft


class Page(TypedDict):
    """`query`: one page of observations."""

    observations: list[Record]
    total: int
    limit: int
    offset: int
    at_commit: str
    semantic_coverage: NotRequired[Any]  # ranked by meaning: how many texts had vectors


class Shown(TypedDict):
    """`show`: one observation for a reviewer."""

    id: str
    path: str
    commit: str | None
    author: str | None
    committed_at: str | None
    front_matter: dict[str, Any]
    body: str
    corrects: list[str]
    retracts: list[str]
    retracted_by: list[str]
    corrected_by: list[str]
    entity_id: str | None
    wins: dict[str, Any]
    at_commit: str
    entity_deleted: bool
    uncommitted: NotRequired[bool]


class Candidate(TypedDict):
    """One value an observation gave a field, as `--explain` weighs it."""

    observation_id: str
    value: Any
    priority: int
    specificity: float
    timestamp: str
    won: bool
    rule: str


class Snapshot(TypedDict):
    """`snapshot`: the entity as its observations say it is (§4)."""

    entity_id: str
    entity_type: str
    snapshot: dict[str, Any]
    provenance: dict[str, Any]  # field → the observation id that decided (several for a union)
    observation_count: int
    last_observation_at: str | None
    computed_at: str | None
    at_commit: str
    valid_at: str
    deleted: bool
    contested: dict[str, Any]  # field → its contest (§19)
    merged_from: NotRequired[str]  # asked by a name merged into the entity
    explain: NotRequired[dict[str, list[Candidate]]]


class EntityItem(TypedDict):
    entity_id: str
    entity_type: str
    observation_count: int
    last_observation_at: str | None
    snapshot: dict[str, Any]


class EntityPage(TypedDict):
    """`entities` and `find`."""

    entities: list[EntityItem]
    total: int
    limit: int
    offset: int


# a period [from, until) over which a field's reduced value is constant (until null: open);
# `from` is a keyword of Python, so the functional form names it
Interval = TypedDict("Interval", {"from": str | None, "until": str | None, "value": Any,
                                  "observation_id": str | list[str],  # several for a union of lists
                                  "commit": str | None, "rule": str})


class FieldIntervals(TypedDict):
    field: str
    intervals: list[Interval]


class Intervals(TypedDict):
    """`intervals`: an entity's fields over valid time (§19)."""

    entity_id: str
    at_commit: str
    fields: list[FieldIntervals]


class Contests(TypedDict):
    """`contested`: fields where two sources disagree about the same time (§19)."""

    at_commit: str
    valid_at: str
    window_seconds: int
    contests: list[dict[str, Any]]  # {entity_id, field, …}: the contest as the reducer weighed it
    total: int
    limit: int
    offset: int


class Evidence(TypedDict):
    field: str
    values: list[Any]
    observations: list[str]
    comparison: str
    similarity: float


class Pair(TypedDict):
    entities: list[str]
    entity_type: str
    score: float
    tier: str
    evidence: list[Evidence]


class Identities(TypedDict):
    """`identities`: pairs of entities that may be the same, best first (§20)."""

    at_commit: str
    candidates: list[Pair]
    total: int
    limit: int
    offset: int


class IdentityState(TypedDict):
    fingerprint: str
    types: int
    fields: int
    candidates: int | None


class Status(TypedDict):
    """`status`: the index, the watcher and its drafts."""

    index: str
    indexed_commit: str | None
    head: str | None
    behind: int | None
    watcher: dict[str, Any] | None
    overlay_documents: int
    last_update: dict[str, Any] | None
    problem: str | None
    semantic: dict[str, Any] | None
    identity: NotRequired[IdentityState | None]


SHAPES: dict[str, Any] = {"query": Page, "show": Shown, "snapshot": Snapshot, "entities": EntityPage, "find": EntityPage,
                          "intervals": Intervals, "contested": Contests, "identities": Identities, "status": Status}


def output_schema(shape: Any) -> JsonSchema:
    """The JSON Schema of a shape (pydantic's, its `$defs` kept)."""
    from pydantic import TypeAdapter

    return TypeAdapter(shape).json_schema(mode="serialization")


def shapes_markdown() -> str:
    """§9's generated list: per operation, its keys (`?` when not always there) and the keys of
    what its lists hold."""
    lines = []
    for name, shape in SHAPES.items():
        lines.append(f"- `{name}`: {_keys(shape)}")
        for key, inner in _nested(shape):
            lines.append(f"  - `{key}`: {_keys(inner)}")
    return "\n".join(lines)


def _keys(shape: Any) -> str:
    optional: frozenset[str] = getattr(shape, "__optional_keys__", frozenset())
    return "{" + ", ".join(f'"{key}"' + ("?" if key in optional else "") for key in shape.__annotations__) + "}"


def _nested(shape: Any, seen: tuple[Any, ...] = ()) -> list[tuple[str, Any]]:
    """(key, shape) of the typed dictionaries a shape's keys hold (directly, optional or in a
    list), depth first."""
    import typing

    found = []
    for key, hint in typing.get_type_hints(shape).items():
        inner = _typed(hint)
        if inner is not None and inner not in seen:
            found.append((key, inner))
            found += _nested(inner, (*seen, inner))
    return found


def _typed(hint: Any) -> Any:
    """The typed dictionary `hint` is, or holds in a list or beside None; None otherwise."""
    import typing

    if hasattr(hint, "__annotations__") and hasattr(hint, "__total__"):
        return hint
    for inner in typing.get_args(hint):
        found = _typed(inner)
        if found is not None:
            return found
    return None
