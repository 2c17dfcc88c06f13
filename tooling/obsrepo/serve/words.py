"""How the pages say things: values, commits, times and the rule that decided, in words
(Jinja2 filters; the templates escape whatever they return)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup

from .links import path
from .markdown import render

POLICIES = {
    "latest": "the latest observation wins",
    "merge_array": "every observation's values are merged",
    "highest_priority": "the highest priority wins, then the most specific, then the latest",
}
DIFF_RULES = {
    "priority": "a higher priority", "specificity": "more specific", "timestamp": "a later observation",
    "correction": "a correction", "retracted": "the winner was retracted", "merged": "it came with a merged entity",
    "deleted": "the entity was deleted", "only": "the only value", "id": "the same rank: the smaller id",
    "last_write": "the latest observation", "merge_array": "every observation's values merged",
}


def value(given: Any) -> str:
    """A field's value as a person reads it: text as written, anything else as JSON."""
    if given is None:
        return "–"  # no value (a field's old side before it existed)
    return given if isinstance(given, str) else json.dumps(given, ensure_ascii=False)


def short(sha: str | None) -> str:
    return (sha or "")[:12]


def when(iso: str | None) -> str:
    """`2026-02-13T10:25:00Z` → `2026-02-13 10:25 UTC`."""
    if not iso:
        return ""
    day, _, time = iso.partition("T")
    return f"{day} {time[:5]} UTC" if time else day


def decided(candidates: list[dict[str, Any]]) -> str:
    """Why the winning candidate of a field won, in words, against the best that lost."""
    winner = next((c for c in candidates if c["won"]), None)
    if winner is None:
        return ""
    policy = winner["rule"].split(":")[0]
    losers = [c for c in candidates if not c["won"]]
    if policy != "highest_priority":
        return POLICIES.get(policy, policy)
    if not losers:
        return "the only observation of this field"
    best = max(losers, key=lambda c: (c["priority"], c["specificity"], c["timestamp"]))
    for key, words in (("priority", "higher priority"), ("specificity", "more specific"), ("timestamp", "later")):
        if winner[key] != best[key]:
            shown = when if key == "timestamp" else str
            return f"{words} ({shown(winner[key])} over {shown(best[key])})"
    return "the same priority, specificity and time: the smaller id"


def rule_words(rule: str | None) -> str:
    return DIFF_RULES.get(rule or "", rule or "")


def markdown(body: str) -> Markup:
    """The body's HTML: safe to insert, since raw HTML in it is escaped (markdown.py)."""
    return Markup(render(body))


def facet_link(query: Mapping[str, list[str]], name: str, chosen: str) -> str:
    """The search's query string narrowed to a facet's value, from the first page."""
    return urlencode([(key, item) for key, items in query.items() if key not in (name, "offset") for item in items]
                     + [(name, chosen)])


def paged(query: Mapping[str, list[str]], offset: int) -> str:
    return urlencode([(key, item) for key, items in query.items() if key != "offset" for item in items] + [("offset", offset)])


FILTERS = {"facet_link": facet_link, "paged": paged,
           "value": value, "short": short, "when": when, "decided": decided, "rule_words": rule_words,
           "markdown": markdown, "path": path}
