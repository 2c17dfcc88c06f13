"""Time named in a text question (docs/recall.md, "Time in the question").

"What did Joanna share with her writers group in August 2022?" names a month: the rows
observed in it are likelier answers. `periods(text)` finds the calendar dates a text names
with their year, as half-open UTC intervals:

    9 November, 2022 · 8th December 2023 · November 9, 2022 · 2022-11-09   a day
    August 2022 · Aug 2022 · 2022-08                                       a month
    2023 (1900..2099, not part of a date above)                             a year

Nothing else: a month or a day without its year ("in December"), or a time relative to a
moment the question does not give ("last week", "yesterday"), names no period. English
month names only, whole words; a text's periods are the same whatever else it says.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

MONTHS = {name: number for number, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec")), start=1) for name in names}
_MONTH = r"(?P<{}>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{}>(?:19|20)\d\d)"
_FORMS = [  # the longest first: a day's year is not a year of its own
    ("day", rf"\b{_DAY.format('d')}\s+(?:of\s+)?{_MONTH.format('m')},?\s*{_YEAR.format('y')}\b"),
    ("day", rf"\b{_MONTH.format('m')}\s+{_DAY.format('d')},?\s*{_YEAR.format('y')}\b"),
    ("day", rf"\b{_YEAR.format('y')}-(?P<m>[01]\d)-(?P<d>[0-3]\d)\b"),
    ("month", rf"\b{_MONTH.format('m')},?\s+(?:of\s+)?{_YEAR.format('y')}\b"),
    ("month", rf"\b{_YEAR.format('y')}-(?P<m>[01]\d)\b"),
    ("year", rf"\b{_YEAR.format('y')}\b"),
]
_PATTERNS = [(unit, re.compile(pattern, re.IGNORECASE)) for unit, pattern in _FORMS]


def periods(text: str) -> list[tuple[datetime, datetime]]:
    """The periods `text` names ([start, end) in UTC), in the order they first appear, each once."""
    return _named(text)[0]


def _named(text: str) -> tuple[list[tuple[datetime, datetime]], list[tuple[int, int]]]:
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, tuple[datetime, datetime]]] = []
    for unit, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            span = match.span()
            if any(a < span[1] and span[0] < b for a, b in taken):
                continue
            period = _period(unit, match)
            if period is not None:
                taken.append(span)
                found.append((span[0], period))
    ordered: list[tuple[datetime, datetime]] = []
    for _, period in sorted(found, key=lambda item: item[0]):
        if period not in ordered:
            ordered.append(period)
    return ordered, taken


def _period(unit: str, match: re.Match) -> tuple[datetime, datetime] | None:
    year = int(match["y"])
    month = 1 if unit == "year" else _month(match["m"])
    try:
        start = datetime(year, month, int(match["d"]) if unit == "day" else 1, tzinfo=timezone.utc)
    except (TypeError, ValueError):  # no such month or day (31 November, month 13)
        return None
    if unit == "day":
        from datetime import timedelta

        return start, start + timedelta(days=1)
    if unit == "month":
        return start, datetime(year + month // 12, month % 12 + 1, 1, tzinfo=timezone.utc)
    return start, datetime(year + 1, 1, 1, tzinfo=timezone.utc)


def _month(name: str) -> int:
    return MONTHS.get(name.lower().rstrip("."), 0) if not name.isdigit() else int(name)
