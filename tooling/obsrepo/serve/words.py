"""How the pages say things: values, commits, times and the rule that decided, in words
(Jinja2 filters; the templates escape whatever they return)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from markupsafe import Markup

from .links import breakable, path
from .markdown import render

# the rule that decided a field, in the words of docs/design.md §8b: the one mapping every page
# uses (a policy's name, or what beat every policy, never printed as the code writes it)
RULES = {"highest_priority": "highest priority", "last_write": "last write", "most_specific": "most specific",
         "merge_array": "merged array", "correction": "correction", "deletion": "deletion"}
# why a review's field changed (read/diff.py): the rule, then what decided under it
REASONS = {
    "priority": ("highest_priority", "a higher priority"), "specificity": ("highest_priority", "more specific"),
    "timestamp": ("highest_priority", "a later observation"), "id": ("highest_priority", "the same rank: the smaller id"),
    "last_write": ("last_write", "the latest observation"), "most_specific": ("most_specific", "the most specific observation"),
    "merge_array": ("merge_array", "every observation's values merged"), "correction": ("correction", "a correction"),
    "deleted": ("deletion", "the entity was deleted"),
    "retracted": (None, "the winner was retracted"), "merged": (None, "it came with a merged entity"),
    "only": (None, "the only value"),
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


def rule_of(candidates: list[dict[str, Any]]) -> str:
    """The rule that decided a field (its explain lines, docs/design.md §4), in words."""
    winner = next((c for c in candidates if c["won"]), None)
    if winner is None:
        return ""
    rule = winner["rule"]
    if rule.startswith("correction"):
        return RULES["correction"]
    return RULES.get(rule.split(":")[0], RULES["highest_priority"])


def decided(candidates: list[dict[str, Any]]) -> str:
    """Why the winning candidate of a field won under its rule, in words, against the best that lost."""
    winner = next((c for c in candidates if c["won"]), None)
    if winner is None:
        return ""
    rule = rule_of(candidates)
    losers = [c for c in candidates if not c["won"]]
    if rule == RULES["merge_array"]:
        given = sum(1 for c in candidates if c["won"])
        return f"the values of {given} observation{'' if given == 1 else 's'} merged"
    if rule == RULES["correction"]:
        return "a correction beats every other observation"
    if not losers:
        return "the only observation of this field"
    keys = {RULES["last_write"]: ("timestamp",), RULES["most_specific"]: ("specificity", "priority", "timestamp")}.get(
        rule, ("priority", "specificity", "timestamp"))
    best = losers[0]  # the explain lines are in the rule's order: the first loser is the best
    for key in keys:
        if winner[key] != best[key]:
            shown = when if key == "timestamp" else str
            return f"{WORDS[key]} ({shown(winner[key])} over {shown(best[key])})"
    return "the same rank: the smaller id"


WORDS = {"priority": "higher priority", "specificity": "more specific", "timestamp": "later"}


def rule_words(reason: str | None) -> str:
    """A review's reason (read/diff.py) as `rule: what decided`."""
    rule, words = REASONS.get(reason or "", (None, reason or ""))
    return f"{RULES[rule]}: {words}" if rule is not None and RULES[rule] != words else words


def coverage(semantic: Mapping[str, Any] | None) -> str:
    """The index's semantic coverage (index/vectors.py) in words; a bound caller is told no counts."""
    if not semantic:
        return "no embedder has indexed it"
    fingerprint = semantic.get("fingerprint") or "an embedder"
    if semantic.get("embedded") is None:
        return f"embedded with {fingerprint}"
    total = semantic["embedded"] + semantic["pending"]
    return f"{semantic['embedded']} of {total} texts embedded with {fingerprint}"


def markdown(body: str) -> Markup:
    """The body's HTML: safe to insert, since raw HTML in it is escaped (markdown.py)."""
    return Markup(render(body))


def facet_link(query: Mapping[str, list[str]], name: str, chosen: str) -> str:
    """The search's query string narrowed to a facet's value, from the first page."""
    return urlencode([(key, item) for key, items in query.items() if key not in (name, "offset") for item in items]
                     + [(name, chosen)])


def paged(query: Mapping[str, list[str]], offset: int) -> str:
    return urlencode([(key, item) for key, items in query.items() if key != "offset" for item in items] + [("offset", offset)])


FILTERS = {"breakable": lambda name: Markup(breakable(name)), "facet_link": facet_link, "paged": paged,
           "value": value, "short": short, "when": when, "decided": decided, "rule_of": rule_of, "rule_words": rule_words,
           "coverage": coverage,
           "markdown": markdown, "path": path}
