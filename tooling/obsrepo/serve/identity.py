"""The identity review page (docs/design.md §20): `/identities` — the queue a page at a time,
each pair with both snapshots side by side, the evidence that made it a candidate and the two
commands that decide it (`merge`, `distinct`). Its JSON twin is `{identities, snapshots}`:
`identities` is `obsrepo identities`' JSON for the same filters, `snapshots` each entity's
`obsrepo snapshot` JSON, by id. A bound server's page holds only pairs its tenant sees whole."""

from __future__ import annotations

import shlex

from ..errors import UsageError
from ..ops import Identities, Session, Snapshot, run
from .pages import Answer, Ask

PAIRS_SHOWN = 10  # a page of pairs: each shows two whole snapshots


def identity_review(session: Session, ask: Ask) -> Answer:
    least = ask.one("min")
    try:
        min_score = float(least) if least else None
    except ValueError:
        raise UsageError(f"min must be a number in [0, 1], not '{least}'", parameter="min") from None
    request = Identities(entity_type=ask.one("type") or None, min_score=min_score, at=ask.at,
                         limit=ask.number("limit", PAIRS_SHOWN), offset=ask.number("offset", 0))
    with session.together():  # one read scope: the queue and every snapshot at one commit
        queue = run(session, request).to_json()
        names = sorted({name for pair in queue["candidates"] for name in pair["entities"]})
        snapshots = {name: run(session, Snapshot(name, queue["at_commit"])).to_json() for name in names}
    pairs = [{**pair, "fields": _fields(snapshots, pair), "commands": _commands(pair["entities"])}
             for pair in queue["candidates"]]
    answers = {"identities": queue, "snapshots": snapshots}
    return Answer("identities.html", {"queue": queue, "pairs": pairs, "request": request}, answers)


def _fields(snapshots: dict[str, dict], pair: dict) -> list[dict]:
    """Every field of either snapshot, side by side, with its evidence when it was compared."""
    a, b = (snapshots[name]["snapshot"] for name in pair["entities"])
    evidence = {item["field"]: item for item in pair["evidence"]}
    return [{"field": name, "a": a.get(name), "b": b.get(name), "has_a": name in a, "has_b": name in b,
             "evidence": evidence.get(name)} for name in sorted(a.keys() | b.keys())]


def _commands(entities: list[str]) -> dict[str, str]:
    """The two decisions, as a steward types them (the second entity merged into the first)."""
    first, second = (shlex.quote(name) for name in entities)
    return {"merge": f"obsrepo merge {second} {first} --reason \"…\" --commit",
            "distinct": f"obsrepo distinct {first} {second} --reason \"…\" --commit"}
