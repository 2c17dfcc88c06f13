"""Timestamps as the product writes them (kept apart from the models so readers load fast)."""

from __future__ import annotations

from datetime import datetime, timezone


def format_timestamp(value: datetime) -> str:
    """UTC, `Z`, microseconds only when present: the one canonical spelling."""
    text = value.astimezone(timezone.utc).isoformat()
    return text.replace("+00:00", "Z")
