"""`analyze`: parse, validate and extract the facts of one document. A thin door to `validate`,
which loads pydantic: a caller whose documents are all cached never opens it."""

from __future__ import annotations

from .rules import Analysis

PARALLEL_THRESHOLD = 2000  # documents from which analysing them in worker processes pays for starting them


def analyze(path: str, data: bytes, with_record: bool = False, strict_only: bool = False) -> Analysis:
    """Parse, validate and extract facts (see `validate.analyze`); never raises on bad input."""
    from .validate import analyze as _analyze

    return _analyze(path, data, with_record, strict_only)
