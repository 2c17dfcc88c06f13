"""The classification ladder's content rules (docs/design.md §14): what a document's text says
about who may read it. They only ever raise the declared value, never lower it.

Case-insensitive, whole words: `tokenize`, `passwords.md` and `pcie` do not match.
"""

from __future__ import annotations

import re

from .vocabulary import CLASSIFICATION_RANK, DEFAULT_CLASSIFICATION

RESTRICTED_WORDS = re.compile(r"\b(ssn|social security|credit card|pci|pii)\b", re.IGNORECASE)
CONFIDENTIAL_WORDS = re.compile(r"\b(password|api[_-]?key|token|private[_-]?key|secret)\b", re.IGNORECASE)
SECRET_SEGMENTS = frozenset({"auth", "secrets", "credentials", "keys"})


def _secret_path(source_ref: str) -> bool:
    """A path (or URL) with a segment auth, secrets, credentials or keys, or a .env file
    (`.env`, `.env.local`, `prod.env`)."""
    path = re.split(r"[?#]", source_ref, maxsplit=1)[0]
    segments = [s.lower() for s in re.split(r"[/\\]", path) if s]
    if any(s in SECRET_SEGMENTS for s in segments):
        return True
    last = segments[-1] if segments else ""
    return last == ".env" or last.startswith(".env.") or (last.endswith(".env") and len(last) > 4)


def content_classification(event: str, body: str, source_ref: str | None) -> str:
    """The level the content rules ask for (`public` when none applies)."""
    text = f"{event}\n{body}"
    if RESTRICTED_WORDS.search(text):
        return "restricted"
    if CONFIDENTIAL_WORDS.search(text) or (source_ref is not None and _secret_path(source_ref)):
        return "confidential"
    return "public"


def most_restrictive(*levels: str | None) -> str:
    given = [level for level in levels if level is not None] or [DEFAULT_CLASSIFICATION]
    return max(given, key=CLASSIFICATION_RANK.__getitem__)
