"""Parameter bounds every layer shares: the tenant keys, the page bound and the engine's own
page check. Callers' values are parsed once by the door (`ops/values.py`: Binding, Page)."""

from __future__ import annotations

from .errors import UsageError

TENANT_KEYS = ("org", "project", "agent", "user")
MAX_LIMIT = 1000
TENANT_ENV = "OBSREPO_TENANT"


def check_page(limit: int, offset: int, max_limit: int = MAX_LIMIT) -> None:
    if not 1 <= limit <= max_limit:
        raise UsageError(f"limit must be between 1 and {max_limit}", parameter="limit")
    if offset < 0:
        raise UsageError("offset must not be negative", parameter="offset")
