"""`diff`'s contests (docs/design.md §19): those HEAD opens and those it closes among the entities
the change touches, each side's rows as `diff` read them (so within the caller's binding)."""

from __future__ import annotations

from typing import Any, Protocol

from ..format.contested import DEFAULT_WINDOW, entity_contests, parse_window
from ..format.reduce import Obs, survivor
from ..gitstore import Git
from ..index.reducer_rows import load_policies


class Side(Protocol):
    """What of one side of `diff` (read/diff.py `Side`) its contests are read from."""

    sha: str
    merges: dict[str, str]
    special: list[Obs]
    families: dict[str, list[Obs]]
    valid_at: str | None


def opened_and_closed(git: Git, touched: set[str], base: Side, head: Side) -> dict[str, list[dict[str, Any]]]:
    """The contests (docs/design.md §19, the default window, each commit's time) of the touched
    entities that HEAD opens and those it closes, by entity id, then field: each with its winner
    and challengers as the commit that has it sees them."""
    found: list[dict[tuple[str, str], dict[str, Any]]] = []
    for side in (base, head):
        valid_at = side.valid_at
        contests: dict[tuple[str, str], dict[str, Any]] = {}
        for entity in sorted({survivor(e, side.merges) for e in touched}):
            policies = load_policies(git, side.sha, entity.split("/", 1)[0])
            for contest in entity_contests(entity, side.families.get(entity, []) + side.special, policies,
                                           parse_window(DEFAULT_WINDOW), valid_at=valid_at):
                contests[(contest["entity_id"], contest["field"])] = contest
        found.append(contests)
    before, after = found

    def entries(contests: dict[tuple[str, str], dict[str, Any]], keys: set[tuple[str, str]]) -> list[dict[str, Any]]:
        return [{"entity_id": entity, "field": name, "winner": contests[(entity, name)]["winner"],
                 "challengers": contests[(entity, name)]["challengers"]} for entity, name in sorted(keys)]

    return {"opened": entries(after, set(after) - set(before)), "closed": entries(before, set(before) - set(after))}

