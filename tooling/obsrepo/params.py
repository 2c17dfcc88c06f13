"""Parameter bounds every layer shares: the tenant keys and the page bound. Callers' values are
parsed once, by the door (`ops/values.py`: Binding, Page); the engine trusts them."""

from __future__ import annotations

TENANT_KEYS = ("org", "project", "agent", "user")
MAX_LIMIT = 1000
TENANT_ENV = "OBSREPO_TENANT"
