"""The server's prompts: `recall`, the session memory block as a session's first message.

A prompt's arguments are text (the protocol's rule), so lists are written comma-separated and
the budget as digits; they become the `recall` tool's arguments and go through the same
checks, so a prompt and the tool answer alike. A failure is a protocol error carrying the
error envelope of docs/design.md §7 as its data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

PROMPT = "recall"
DESCRIPTION = ("What to know at the start of a session: the snapshots of the entities in scope, the beliefs that cite "
               "them and the most relevant observations, every fact cited observation-id@commit, within a token budget.")
ARGUMENTS = (  # (name, description)
    ("entity_ids", "Entity ids (type/key), comma-separated: their snapshots come first."),
    ("scope_ids", "Scope ids, comma-separated: only observations (and their entities) with any of them."),
    ("text", "What the session is about: observations are ranked by it."),
    ("budget", "At most this many tokens, counted as characters / 4 (default 2000)."),
    ("at", "A git revision: the repository as it was there (default: the tip served)."),
)
LISTS = ("entity_ids", "scope_ids")
INVALID_PARAMS = -32602


def tool_arguments(given: Mapping[str, str] | None) -> dict[str, Any]:
    """The recall tool's arguments from the prompt's text arguments (empty ones left out)."""
    arguments: dict[str, Any] = {}
    for name, value in (given or {}).items():
        if name in LISTS:
            items = [item.strip() for item in value.split(",") if item.strip()]
            if items:
                arguments[name] = items
        elif name == "budget" and value.strip().isdigit():
            arguments[name] = int(value.strip())
        elif value.strip() or name not in dict(ARGUMENTS):
            arguments[name] = value  # anything else is checked (and refused by name) by the tool
    return arguments


def failure_data(text: str) -> tuple[str, Any]:
    """The message and data of a protocol error from a failed tool answer (the envelope)."""
    envelope = json.loads(text)
    return envelope["error"]["message"], envelope
