"""What a text question says besides its topic (docs/recall.md, "Hints in the question"): a
period it names, an entity it names. Each multiplies the lexical score of the rows it points
at, after the neighbours' context (context.py):

    score × (1 + IN_TIME)   a row observed in a period the text names (when.py)
    score × (1 + ABOUT)     a row about an entity the text names: a word of the entity's key
                            (the part after `type/`, split at every non-letter, non-digit) is a
                            word of the text, function words (bm25.QUERY_STOP_WORDS) aside

then rounded to 6 decimals once. A row no word of the text reached (score 0) stays at 0: a
hint orders what the words found, it never finds. Everything is read from the rows that passed
every filter (`visible`, then the filter), so another tenant's rows change nothing. Ranked by
meaning (semantic.py), the hint multiplies the fused score instead (`scores.hint`).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

from .bm25 import QUERY_STOP_WORDS, Scored
from .scope import ReadScope
from .when import periods

IN_TIME = 1.0  # a row observed in a period the text names: its lexical score doubled
ABOUT = 1.0  # a row about an entity the text names: its lexical score doubled
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_WORD = re.compile(r"[^\W_]+")


def hinted(scope: ReadScope, scored: Scored, text: str, in_time: bool, about: bool) -> Scored:
    """`scored` (a lexical ranking) with the hints `text` gives applied (`in_time`, `about`:
    each may be off), rounded as the lexical scores are (half away from zero)."""
    import numpy as np

    from .bm25 import _round6 as round6

    factor = factors(scope, scored.row_ids, text, in_time, about)
    if factor is None:
        return scored
    return Scored(scored.row_ids, np.where(factor != 1.0, round6(scored.scores * factor), scored.scores))


def most(text: str, in_time: bool, about: bool) -> float:
    """The largest factor the hints of `text` may give a row (1.0: no hint)."""
    factor = 1.0
    if in_time and IN_TIME and periods(text):
        factor *= 1 + IN_TIME
    if about and ABOUT and text_words(text):
        factor *= 1 + ABOUT
    return factor


def factors(scope: ReadScope, row_ids: Any, text: str, in_time: bool, about: bool) -> Any:
    """Each of `row_ids`' (sorted) factor, 1.0 where no hint points at it; None when `text`
    gives no hint (or both are off)."""
    import numpy as np

    named = periods(text) if in_time and IN_TIME else []
    words = text_words(text) if about and ABOUT else frozenset()
    if not len(row_ids) or not (named or words):
        return None
    factor = np.ones(len(row_ids))
    if named:
        factor[_in_periods(scope, row_ids, named)] *= 1 + IN_TIME
    if words:
        factor[_about(scope, row_ids, words)] *= 1 + ABOUT
    return factor


def text_words(text: str) -> frozenset[str]:
    """The words of `text` that may name an entity: lower case, function words aside."""
    return frozenset(word for word in _WORD.findall(text.lower()) if word not in QUERY_STOP_WORDS)


def key_words(entity: str) -> frozenset[str]:
    """The words of an entity id's key (`person/mary-ann` → mary, ann)."""
    return text_words(entity.split("/", 1)[-1])


def _in_periods(scope: ReadScope, row_ids: Any, named: list[tuple[datetime, datetime]]) -> Any:
    import numpy as np

    from .places import timestamps

    at = timestamps(scope, row_ids)
    inside = np.zeros(len(at), dtype=bool)
    for start, end in named:
        inside |= (at >= _micros(start)) & (at < _micros(end))
    return inside


def _micros(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(microseconds=1)


def _about(scope: ReadScope, row_ids: Any, words: frozenset[str]) -> Any:
    """Which of `row_ids` are about an entity `words` name (a mask)."""
    import numpy as np

    from .places import entities

    codes, names = entities(scope, row_ids)
    present = np.unique(codes[codes >= 0])
    kept: dict = scope.remember(("entity key words", *scope.view_key()), dict) if scope.memo is not None else {}
    named = []
    for code in present.tolist():
        found = kept.get(names[code])
        if found is None:
            found = kept[names[code]] = key_words(names[code])
        if found & words:
            named.append(code)
    return np.isin(codes, np.asarray(named, dtype=codes.dtype))
