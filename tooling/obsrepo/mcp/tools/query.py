"""observation_query: seed 002's query tool over the index."""

from __future__ import annotations

from typing import Any

from ...errors import UsageError
from ...ops import Moment, Query, Session, run
from ...ops.surface import observation_lines
from ..registry import Text, read_tool

MODE = {"type": "string", "enum": ["short", "full", "json"], "default": "short",
        "description": "short: one line each; full: source, body, data and scopes too; json: the page object."}


@read_tool(Query, "Query observations", {
    "scopes": "scopeIds", "type": "type", "source": "source", "after": "afterDate", "before": "beforeDate",
    "limit": "limit", "offset": "offset", "text": "text", "entity": "entity", "at": "at",
    "match": "match", "embedding": "embedding", "time_hint": "timeHint",
    "entity_hint": "entityHint",
}, extras={"mode": MODE}, answers=False)
def observation_query(session: Session, request: Query, mode: str = "short") -> Any:
    """Observations that match every filter given (AND), newest first (timestamp, then id), or
    by relevance with `text` (by meaning too with `match` semantic or hybrid and the server's
    embedder, or with the caller's own query vector `embedding`). Answers with the text of `obsrepo query` in the mode asked:
    `short` lines `[<ISO ms>] [<type>] <event>`, `full` entries with source, body, data and
    scopes, or `json`, the page object {observations, total, limit, offset, at_commit} (also
    as structured content). "No observations found." when nothing matches (text modes)."""
    _refuse_an_empty_window(request)
    page = run(session, request).to_json()
    if mode == "json":
        return page
    return Text(observation_lines(page, mode))


def _refuse_an_empty_window(request: Query) -> None:
    """This tool refuses `after` at or past `before` (the command line answers nothing)."""
    after, before = Moment.optional(request.after, "after"), Moment.optional(request.before, "before")
    if after and before and after.value >= before.value:
        raise UsageError("after must be earlier than `before`", parameter="after")
