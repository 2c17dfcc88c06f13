"""Timestamps as the product reads and writes them (kept apart from the models so readers load fast).

Every instant the product handles lies within years 0001..9999 once converted to UTC, so that
it can always be converted, stored, compared and printed. Two readers share that bound:

* `parse_timestamp` / `parse_date_or_timestamp`: a document's timestamps, strictly (seconds
  and a timezone); a `TimeError` carries the rule that `check` reports;
* `parse_time`: every time option (`--after`, `--before`, `--as-of`, `--timestamp`, and the MCP
  tools' date arguments): any ISO 8601 date or timestamp with a timezone, or unix milliseconds
  as an integer or as all-digit text (what generic clients send for an integer typed in a
  text box); a bad value is a `UsageError` naming the option.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from .errors import UsageError

TIMESTAMP_PATTERN = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})"
_TIMESTAMP = re.compile(TIMESTAMP_PATTERN)
_NO_ZONE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?")
DATE_PATTERN = r"\d{4}-\d{2}-\d{2}"
_DATE = re.compile(DATE_PATTERN)
RANGE = "years 0001..9999 in UTC"
# unix milliseconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z
MIN_MS, MAX_MS = -62135596800000, 253402300799999
_DIGITS = re.compile(r"[0-9]+")  # ASCII only: str.isdigit() would take '²' or Arabic-Indic digits
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_BEYOND_MICROSECONDS = re.compile(r"[.,][0-9]{7,}")
_FIRST_SECOND, _LAST_SECOND = MIN_MS // 1000, MAX_MS // 1000


class TimeError(ValueError):
    """A document's timestamp is not acceptable; `rule` is what `check` reports."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def format_timestamp(value: datetime) -> str:
    """UTC, `Z`, microseconds only when present: the one canonical spelling."""
    text = value.astimezone(timezone.utc).isoformat()
    return text.replace("+00:00", "Z")


def commit_time(seconds: int) -> datetime:
    """A commit's time (git's unix seconds, `%ct`) in UTC, within years 0001..9999: git records
    any number and any offset (year 10000, `+9959`), and no such commit stops a read; beyond the
    range it reads as the range's nearest end (docs/design.md §8)."""
    return _EPOCH + timedelta(seconds=min(max(seconds, _FIRST_SECOND), _LAST_SECOND))


def to_utc(moment: datetime) -> datetime:
    """`moment` in UTC; TimeError("timestamp-range") when that leaves years 0001..9999."""
    try:
        return moment.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise TimeError("timestamp-range", f"timestamp is outside {RANGE}") from None


def parse_timestamp(value: str | datetime) -> datetime:
    """ISO 8601 with seconds and a timezone (`Z` or `±HH:MM`), returned in UTC."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise TimeError("timestamp-timezone", "timestamp needs a timezone (Z or ±HH:MM)")
        return to_utc(value)
    if not isinstance(value, str):
        raise TimeError("timestamp-format", "timestamp must be an ISO 8601 string such as 2026-02-13T10:25:00Z")
    if not _TIMESTAMP.fullmatch(value):
        if _NO_ZONE.fullmatch(value):
            raise TimeError("timestamp-timezone", "timestamp needs a timezone (Z or ±HH:MM)")
        raise TimeError("timestamp-format", "timestamp must be ISO 8601 with seconds and a timezone, e.g. 2026-02-13T10:25:00Z")
    if value.startswith("0000"):
        raise TimeError("timestamp-range", f"timestamp is outside {RANGE}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise TimeError("timestamp-format", "timestamp is not a real date and time") from None
    return to_utc(parsed)


def parse_date_or_timestamp(value: str | datetime) -> datetime:
    """A date (midnight UTC) or a timestamp as `parse_timestamp` reads it."""
    if isinstance(value, str) and _DATE.fullmatch(value):
        if value.startswith("0000"):
            raise TimeError("timestamp-range", f"date is outside {RANGE}")
        try:
            return datetime.fromisoformat(value).replace(tzinfo=timezone.utc)
        except ValueError:
            raise TimeError("timestamp-format", "not a real date") from None
    return parse_timestamp(value)


def parse_time(value: str | int, parameter: str) -> datetime:
    """A time option: ISO 8601 with a timezone, a date meaning midnight UTC, or unix
    milliseconds (an integer, or text of ASCII digits only). Returned in UTC; anything
    else, or an instant outside years 0001..9999 in UTC, is a UsageError naming `parameter`."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _from_unix_ms(value, str(value), parameter)
    if not isinstance(value, str):
        raise UsageError(f"{parameter} expects ISO 8601 text or unix milliseconds", parameter=parameter)
    text = value.strip()
    if _DIGITS.fullmatch(text):
        if len(text) in (4, 6, 8):  # YYYY, YYYYMM, YYYYMMDD: a year or a date, never meant as 1970
            raise UsageError(f"{parameter} '{text}' reads as a year or a date and as unix milliseconds of "
                             "1970-01-01: write the date as 2026-02-13, or give the milliseconds in full",
                             parameter=parameter)
        digits = text.lstrip("0") or "0"
        return _from_unix_ms(int(digits) if len(digits) <= len(str(MAX_MS)) else MAX_MS + 1, value, parameter)
    if text.startswith("0000"):
        raise UsageError(f"{parameter} must lie within {RANGE}, got '{value}'", parameter=parameter)
    if _BEYOND_MICROSECONDS.search(text):  # fromisoformat would drop the rest: a period written shorter than asked
        raise UsageError(f"{parameter} holds at most microseconds (6 digits after the second), got '{value}'",
                         parameter=parameter)
    try:
        if len(text) == 10:
            return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{parameter} expects an ISO 8601 date or timestamp or unix milliseconds, got '{value}'",
                         parameter=parameter) from None
    if moment.tzinfo is None:
        raise UsageError(f"{parameter} needs a timezone (Z or ±HH:MM): '{value}'", parameter=parameter)
    try:
        return to_utc(moment)
    except TimeError:
        raise UsageError(f"{parameter} must lie within {RANGE}, got '{value}'", parameter=parameter) from None


def _from_unix_ms(milliseconds: int, written: str, parameter: str) -> datetime:
    """Unix milliseconds as an exact instant (no float rounding), within the product's years."""
    if not MIN_MS <= milliseconds <= MAX_MS:
        raise UsageError(f"{parameter} must lie within {RANGE} ({MIN_MS}..{MAX_MS} in unix milliseconds), "
                         f"got {written[:40]}", parameter=parameter)
    return _EPOCH + timedelta(milliseconds=milliseconds)
