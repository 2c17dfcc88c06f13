"""The values every operation takes, parsed once at the door (docs/design.md, "The door").

An adapter hands raw text or numbers here; inner code trusts what comes out. Every failure is a
VALIDATION_ERROR whose `parameter` is the request's FIELD (`at`, `after`, `limit`), and whose
message begins with that field, so that each adapter can rename it to its own surface
(`--after`, `afterDate`) with `ObsrepoError.renamed` without reading the text.

    Rev          one full commit sha: the §8a resolver, once
    Moment       an instant in UTC (ISO 8601, a date, unix milliseconds)
    Page         limit and offset within their bounds
    Binding      a tenant binding, and its one `narrow`
    Ceiling      the most restrictive classification a caller may read
    Destination  WorkTree() or ProposalBranch(name): where a write goes
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from ..errors import UsageError
from ..format.vocabulary import CLASSIFICATION_RANK, CLASSIFICATIONS
from ..gitstore import Git
from ..params import MAX_LIMIT, TENANT_ENV, TENANT_KEYS
from ..times import format_timestamp, parse_time

MAX_OFFSET = 1_000_000_000


@dataclass(frozen=True, slots=True)
class Rev:
    """One commit, as a full sha (docs/design.md §8a: one revision, one commit)."""

    sha: str

    @staticmethod
    def of(git: Git, name: str, field: str) -> Rev:
        return Rev(git.resolve(name, field))


@dataclass(frozen=True, slots=True)
class Moment:
    """An instant in UTC, within years 0001..9999."""

    value: datetime

    @staticmethod
    def parse(given: str | int | datetime, field: str) -> Moment:
        if isinstance(given, datetime):
            if given.tzinfo is None:
                raise UsageError(f"{field} needs a timezone", parameter=field)
            return Moment(parse_time(format_timestamp(given), field))
        return Moment(parse_time(given, field))

    @staticmethod
    def optional(given: str | int | datetime | None, field: str) -> Moment | None:
        """None stays None; anything given (an empty text too) must be a moment."""
        return None if given is None else Moment.parse(given, field)

    def iso(self) -> str:
        return format_timestamp(self.value)


@dataclass(frozen=True, slots=True)
class Page:
    limit: int = 50
    offset: int = 0

    @staticmethod
    def of(limit: int, offset: int = 0, max_limit: int = MAX_LIMIT) -> Page:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= max_limit:
            raise UsageError(f"limit must be between 1 and {max_limit}", parameter="limit")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise UsageError("offset must not be negative", parameter="offset")
        if offset > MAX_OFFSET:
            raise UsageError(f"offset must be at most {MAX_OFFSET}", parameter="offset")
        return Page(limit, offset)


@dataclass(frozen=True, slots=True)
class Binding:
    """A partial tenant mapping (docs/design.md §8 "Tenants"); empty means unbound. An
    observation is visible iff its tenant has every bound key with an equal value."""

    pairs: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def of(mapping: Mapping[str, str] | None) -> Binding:
        return Binding(tuple(sorted((mapping or {}).items())))

    @staticmethod
    def parse(text: str, field: str) -> Binding:
        """`org=a[,project=p,agent=x,user=u]`; anything else (an empty text included: never
        "every tenant") is refused naming `field`."""
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"{field} is not valid UTF-8 text", parameter=field) from None
        binding: dict[str, str] = {}
        for part in text.split(","):
            key, sep, value = part.strip().partition("=")
            if not sep or key not in TENANT_KEYS or not value or key in binding or "\0" in value:
                raise UsageError(f"{field} expects org=…[,project=…,agent=…,user=…], got '{text}'", parameter=field)
            binding[key] = value
        return Binding.of(binding)

    @staticmethod
    def configured(given: str | None, field: str, environ: Mapping[str, str] = os.environ) -> Binding:
        """The caller's binding: the given text, else OBSREPO_TENANT; set but empty is refused
        (fail closed), unset is no binding."""
        if given is not None:
            return Binding.parse(given, field)
        text = environ.get(TENANT_ENV)
        return Binding.parse(text, TENANT_ENV) if text is not None else Binding()

    def as_dict(self) -> dict[str, str]:
        return dict(self.pairs)

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def narrow(self, where: Mapping[str, str | None]) -> Binding | None:
        """The binding narrowed by tenant filters (`org`, `project`, …) inside it; it can never
        widen it. None when a filter contradicts the binding: such a caller sees nothing."""
        narrowed = self.as_dict()
        for key, value in where.items():
            if value is None:
                continue
            if key not in TENANT_KEYS:
                raise UsageError(f"{key} is not a tenant key ({', '.join(TENANT_KEYS)})", parameter=key)
            if not value or "\0" in value:  # never "any": an empty filter is refused, not ignored
                raise UsageError(f"{key} must be a tenant value, not empty", parameter=key)
            if key in narrowed and narrowed[key] != value:
                return None
            narrowed[key] = value
        return Binding.of(narrowed)


@dataclass(frozen=True, slots=True)
class Ceiling:
    """The most restrictive classification a caller may read (None: no ceiling)."""

    level: str | None = None

    @staticmethod
    def parse(level: str | None, field: str) -> Ceiling:
        if level is not None and level not in CLASSIFICATION_RANK:
            raise UsageError(f"{field} is {', '.join(CLASSIFICATIONS[:-1])} or {CLASSIFICATIONS[-1]}", parameter=field)
        return Ceiling(level)

    def under(self, other: Ceiling) -> Ceiling:
        """The tighter of the two."""
        given = [c.level for c in (self, other) if c.level is not None]
        return Ceiling(min(given, key=CLASSIFICATION_RANK.__getitem__) if given else None)


UNBOUND = Binding()
NO_CEILING = Ceiling()


@dataclass(frozen=True, slots=True)
class WorkTree:
    """A write into the work tree: one new file, whole or absent (docs/design.md §8a)."""


@dataclass(frozen=True, slots=True)
class ProposalBranch:
    """A write as one new commit on a proposal branch; `name` None: the session's branch."""

    name: str | None = None


Destination = WorkTree | ProposalBranch


def destination(commit: bool, branch: str | None) -> Destination:
    """Where a write goes: a branch is named only for a commit."""
    if commit:
        return ProposalBranch(branch)
    if branch is not None:
        raise UsageError("`branch` names the proposal branch of `commit`", parameter="branch")
    return WorkTree()
