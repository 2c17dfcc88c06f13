"""The classification ladder's content rules (docs/design.md §14): what a document's text holds
that not everyone may read. They only ever raise the declared value, never lower it.

They look for the secret itself, not for a word about one: "I kept it a secret", "a token of
thanks" or "password reset requested" hold nothing to protect, while `password: hunter2`, an
AWS access key or a card number do.

- restricted: a payment card number (13 to 19 digits, spaces or dashes between groups, that
  pass the Luhn check) or a US social security number (`123-45-6789`);
- confidential: a credential written out — a private key block, a known key format (AWS,
  GitHub, GitLab, Slack, Stripe, OpenAI-style `sk-…`, Google `AIza…`, a JSON Web Token), an
  `Authorization: Bearer`/`Basic` value, a URL with a password (`scheme://user:pass@host`), or
  `password|passwd|pwd|secret|token|api key|access key|private key|client secret` followed
  by `:` or `=` and a value; or a `source_ref` path with a segment `auth`, `secrets`,
  `credentials` or `keys`, or a `.env` file.
"""

from __future__ import annotations

import re

from .vocabulary import CLASSIFICATION_RANK, DEFAULT_CLASSIFICATION

SECRET_SEGMENTS = frozenset({"auth", "secrets", "credentials", "keys"})
_NAMES = r"pass(?:word|wd|phrase)?|pwd|secret|(?:auth[_ -]?)?token|api[_ -]?key|access[_ -]?key|private[_ -]?key|client[_ -]?secret"
KEY_FORMATS = re.compile("|".join([
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key id
    r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{22,}\b|\bglpat-[A-Za-z0-9_-]{20,}\b",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b",  # Slack
    r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b",  # Stripe
    r"\bsk-[A-Za-z0-9_-]{20,}\b",  # OpenAI and alike
    r"\bAIza[0-9A-Za-z_-]{35}\b",  # Google API key
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # a JSON Web Token
    r"\b(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{16,}",
    r"\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@",  # a URL with a password
]))
# what each of KEY_FORMATS starts with: a text without any is read no further (~20x faster)
KEY_MARKERS = re.compile(r"BEGIN|AKIA|ASIA|gh[pousr]_|github_pat_|glpat-|xox|[sr]k_|sk-|AIza|eyJ|Bearer|Basic|://")
ASSIGNED = re.compile(rf"(?i:\b(?:{_NAMES})\b[\"']?\s*[:=]\s*[\"']?[^\s\"',;]{{4,}})")  # name = value
NAME_STEMS = ("pass", "pwd", "secret", "token", "key")  # in every name ASSIGNED knows (lower case)
SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")
CARD = re.compile(r"(?<![\d.,-])(?<!\d[ -])\d(?:[ -]?\d){12,18}(?![ -]?\d|[.,]\d)")  # a whole run of digits


def _luhn(digits: str) -> bool:
    total = 0
    for place, char in enumerate(reversed(digits)):
        value = int(char) * (2 if place % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def card_number(text: str) -> bool:
    """A payment card number: 13 to 19 digits (one separator at most between two) passing Luhn,
    not all one digit."""
    for found in CARD.finditer(text):
        digits = re.sub(r"[ -]", "", found.group())
        if _luhn(digits) and len(set(digits)) > 1:
            return True
    return False


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
    if _DIGITS.search(text) and (SSN.search(text) or card_number(text)):
        return "restricted"
    if credential(text) or (source_ref is not None and _secret_path(source_ref)):
        return "confidential"
    return "public"


_DIGITS = re.compile(r"\d\d\d")  # a card number and an SSN both start so


def credential(text: str) -> bool:
    """A credential written out (a key format, or a secret's name with `:` or `=` and a value)."""
    if KEY_MARKERS.search(text) and KEY_FORMATS.search(text):
        return True
    if ":" not in text and "=" not in text:
        return False
    folded = text.lower()
    return any(stem in folded for stem in NAME_STEMS) and ASSIGNED.search(text) is not None


def most_restrictive(*levels: str | None) -> str:
    given = [level for level in levels if level is not None] or [DEFAULT_CLASSIFICATION]
    return max(given, key=CLASSIFICATION_RANK.__getitem__)
