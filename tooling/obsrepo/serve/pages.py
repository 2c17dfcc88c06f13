"""The pages of the inspector (docs/design.md §17): each one question, or a few, asked of the
door, and the answer as a template's context. The JSON twin of a page is the same answers, each
equal to the command line's JSON for the same question:

    /                       {status, entities, recent, overview, types}: status; entities;
                            query --limit 10; the counts and recent commits the page
                            says (visible ones only); query's facets by type
    /search?q=…&scope=…     query --text … --scope … (facets are the page's own)
    /entity/TYPE/KEY        {snapshot, relations, neighbourhood, timeline}: snapshot --explain;
                            relations; related --hops 2 --limit 24; timeline --entity
                            --limit 100
    /history/TYPE/KEY       history (its own page: it reduces the entity at every commit
                            that touched it, seconds for a busy entity of a large repository)
    /observation/ID         show
    /comprehension/ID       the belief operation: the document, its citations, its versions
    /diff/BASE..HEAD        diff BASE HEAD

A page's request fields come from the URL's path and query parameters only; the binding and the
ceiling are the session's (the server's configuration), never the URL's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..ops import (
    Belief,
    Contested,
    Diff,
    Entities,
    Facets,
    History,
    Overview,
    Query,
    Related,
    Relations,
    Session,
    Show,
    Snapshot,
    Status,
    Timeline,
    periods,
    run,
)

# request fields by the query parameter (or path part) that carries them
QUERY_NAMES = {"text": "q", "scopes": "scope", "observation_id": "id", "comprehension_id": "id", "base": "BASE",
               "head": "HEAD"}
TIMELINE_LIMIT = 100
RECENT = 10
NEIGHBOURHOOD_HOPS = 2
NEIGHBOURS_SHOWN = 24  # the first by id (a busy entity reaches hundreds)
FIELDS_DISPUTED = 1000  # the contests of one entity asked at once: every field it has, in practice
# what the entity page lists of a long list (a busy entity's fields have thousands of candidates,
# 880 KB of page, and its relations hundreds): the first, in the answer's order (a field's
# strongest candidates first); the rest are counted, and every one is in the JSON twin
SHOWN = {"challengers": 10, "relations": 50}


@dataclass(frozen=True)
class Ask:
    """What a page asks: its path's argument and its query parameters (a name may repeat)."""

    argument: str
    params: Mapping[str, Sequence[str]]
    at: str | None  # ?at=, else the server's --at

    def one(self, name: str) -> str | None:
        values = self.params.get(name) or ()
        return values[-1] if values else None

    def number(self, name: str, default: int) -> int:
        text = self.one(name)
        if text is None or text == "":
            return default
        if not text.isascii() or not text.lstrip("-").isdigit():
            raise UsageError(f"{name} must be a whole number, not '{text}'", parameter=name)
        return int(text)


@dataclass(frozen=True)
class Answer:
    template: str
    context: dict[str, Any]  # the template's; `json` is the twin
    json: dict[str, Any]


def home(session: Session, ask: Ask) -> Answer:
    """Every count, type and commit through the session's binding and ceiling (docs/design.md
    §8b): a bound server's home page is its tenant's repository."""
    with session.together():
        answers = {"status": run(session, Status()).to_json(),
                   "entities": run(session, Entities(at=ask.at)).to_json(),
                   "recent": run(session, Query(limit=RECENT, at=ask.at)).to_json(),
                   "overview": run(session, Overview(recent=RECENT, at=ask.at)).to_json(),
                   "types": run(session, Facets(Query(at=ask.at))).to_json()["facets"].get("type", [])}
    return Answer("home.html", answers, answers)


def search_request(ask: Ask) -> Query:
    def given(name: str) -> str | None:  # an empty field of the search form is no filter
        return ask.one(name) or None

    return Query(scopes=tuple(s for s in ask.params.get("scope", ()) if s), text=given("q"), type=given("type"),
                 source=given("source"), entity=given("entity"), after=given("after"), before=given("before"),
                 org=given("org"), project=given("project"), agent=given("agent"), user=given("user"),
                 limit=ask.number("limit", 50), offset=ask.number("offset", 0), order=ask.one("order") or "desc", at=ask.at)


def search(session: Session, ask: Ask) -> Answer:
    request = search_request(ask)
    page = run(session, request).to_json()
    counts = run(session, Facets(request)).to_json()
    return Answer("search.html", {"page": page, "facets": counts["facets"], "request": request}, page)


def entity(session: Session, ask: Ask) -> Answer:
    """Four questions over one read scope: the entity is reduced once, not once a question."""
    name = ask.argument
    with session.together():
        snapshot = run(session, Snapshot(name, ask.at, explain=True)).to_json()
        name = snapshot["entity_id"]  # a merged-away entity answers with its survivor
        answers = {"snapshot": snapshot,
                   "relations": run(session, Relations(name, at=ask.at)).to_json(),
                   "neighbourhood": run(session, Related(name, hops=NEIGHBOURHOOD_HOPS, at=ask.at,
                                                         limit=NEIGHBOURS_SHOWN)).to_json(),
                   "timeline": run(session, Timeline(entity=name, limit=TIMELINE_LIMIT, at=ask.at)).to_json()}
        # the fields two sources dispute, with both values and sources (docs/design.md §19)
        disputes = run(session, Contested(entities=(name,), at=ask.at, limit=FIELDS_DISPUTED)).to_json()["contests"] \
            if snapshot.get("contested") else []
        # valid-time intervals, only where a candidate wrote a period (docs/design.md §19)
        spans = periods(session, name, ask.at)
    return Answer("entity.html", {**answers, "shown": SHOWN, "contests": {c["field"]: c for c in disputes},
                                  "periods": spans}, answers)


def history(session: Session, ask: Ask) -> Answer:
    """The whole history, commit by commit (`?at` changes nothing: it is always the whole)."""
    shown = run(session, History(ask.argument)).to_json()
    return Answer("history.html", {"history": shown}, shown)


def observation(session: Session, ask: Ask) -> Answer:
    shown = run(session, Show(ask.argument, ask.at)).to_json()
    return Answer("observation.html", {"shown": shown}, shown)


def comprehension(session: Session, ask: Ask) -> Answer:
    shown = run(session, Belief(ask.argument, ask.at)).to_json()
    return Answer("comprehension.html", {"belief": shown}, shown)


def review(session: Session, ask: Ask) -> Answer:
    """`BASE..HEAD`, each one commit (docs/design.md §8a); the pair pins the commits, so `?at`
    changes nothing here."""
    base, dots, head = ask.argument.partition("..")
    if not dots or head.startswith("."):
        raise UsageError(f"a review's path is /diff/BASE..HEAD, not '{ask.argument}'", parameter="range")
    result = run(session, Diff(base, head)).to_json()
    return Answer("diff.html", {"review": result}, result)


PAGES: dict[str, Callable[[Session, Ask], Answer]] = {"home": home, "search": search, "entity": entity, "history": history,
                                                      "observation": observation, "comprehension": comprehension,
                                                      "diff": review}
