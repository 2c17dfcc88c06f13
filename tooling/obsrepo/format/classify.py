"""The classification ladder's content rules (docs/design.md §14): what a document's text says
about who may read it. They only ever raise the declared value, never lower it.

Case-insensitive, whole words: `tokenize`, `passwords.md` and `pcie` do not match.
"""

from __future__ import annotations

import re

from .vocabulary import CLASSIFICATION_RANK, DEFAULT_CLASSIFICATION

_RESTRICTED = "ssn|social security|credit card|pci|pii"
_CONFIDENTIAL = "password|api[_-]?key|token|private[_-]?key|secret"
RESTRICTED_WORDS = re.compile(rf"\b({_RESTRICTED})\b", re.IGNORECASE)
CONFIDENTIAL_WORDS = re.compile(rf"\b({_CONFIDENTIAL})\b", re.IGNORECASE)
SECRET_SEGMENTS = frozenset({"auth", "secrets", "credentials", "keys"})
# both word lists in one pass: the first word found of either (a restricted one wins a tie)
_ANY_WORD = re.compile(rf"\b(?:({_RESTRICTED})|({_CONFIDENTIAL}))\b", re.IGNORECASE)
# the same words, case-sensitive and anywhere, in `_folded` text: ~4x faster than the search above,
# which runs only when they are there
_ANY_FOLDED = re.compile(f"{_RESTRICTED}|{_CONFIDENTIAL}")


def _folded(text: str) -> str:
    """`text` in lower case where IGNORECASE matching of the words could see a letter: besides
    the ASCII cases, re's IGNORECASE matches i to İ and ı, s to ſ and k to K (U+212A);
    `lower()` makes İ an i and a combining dot (U+0307), dropped here."""
    text = text.lower()
    return text if text.isascii() else text.replace("ı", "i").replace("ſ", "s").replace("\u0307", "")


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
    first = _ANY_WORD.search(text) if _ANY_FOLDED.search(_folded(text)) else None
    if first is not None:
        # a confidential word came first: a restricted one may still follow it
        if first.group(1) is not None or RESTRICTED_WORDS.search(text, first.start() + 1):
            return "restricted"
        return "confidential"
    if source_ref is not None and _secret_path(source_ref):
        return "confidential"
    return "public"


def most_restrictive(*levels: str | None) -> str:
    given = [level for level in levels if level is not None] or [DEFAULT_CLASSIFICATION]
    return max(given, key=CLASSIFICATION_RANK.__getitem__)
