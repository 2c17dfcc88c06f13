"""The parsers of request parameters every surface shares (times live in `times`): the tenant
binding and paging. Adapters (CLI, MCP) hand raw values here; the library trusts the result."""

from __future__ import annotations

import os
from collections.abc import Mapping

from .errors import UsageError

TENANT_KEYS = ("org", "project", "agent", "user")
MAX_LIMIT = 1000
TENANT_ENV = "OBSREPO_TENANT"


def parse_binding(text: str, parameter: str) -> dict[str, str]:
    """`org=a[,project=p,agent=x,user=u]` → a binding; anything else (an empty text included:
    never "every tenant") is a VALIDATION_ERROR naming `parameter`."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{parameter} is not valid UTF-8 text", parameter=parameter) from None
    binding: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep or key not in TENANT_KEYS or not value or key in binding or "\0" in value:
            raise UsageError(f"{parameter} expects org=…[,project=…,agent=…,user=…], got '{text}'", parameter=parameter)
        binding[key] = value
    return binding


def binding_from(given: str | None, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The caller's binding: the given value, else OBSREPO_TENANT; set but empty is refused
    (fail closed), unset is no binding."""
    if given is not None:
        return parse_binding(given, "tenant")
    text = environ.get(TENANT_ENV)
    return parse_binding(text, TENANT_ENV) if text is not None else {}


def check_page(limit: int, offset: int, max_limit: int = MAX_LIMIT) -> None:
    if not 1 <= limit <= max_limit:
        raise UsageError(f"limit must be between 1 and {max_limit}", parameter="limit")
    if offset < 0:
        raise UsageError("offset must not be negative", parameter="offset")
