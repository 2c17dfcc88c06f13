"""observation_query: seed 002's query tool over the index."""

from __future__ import annotations

from typing import Any

from ...errors import UsageError
from ...read.query import QueryRequest
from ...read.render import render_observations
from ..registry import AT, ENTITY_ID, OFFSET, Text, instant, limit, moment, read_tool, text


@read_tool("Query observations", {
    "scopeIds": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 512}, "maxItems": 100,
                 "description": "Scope ids; an observation matches when it has ANY of them."},
    "type": text("Exact event type, e.g. task.updated.", 256),
    "source": text("Source prefix, taken literally (agent: matches agent:x; _ and % are no wildcards).", 512),
    "afterDate": moment("From this time on (inclusive)"),
    "beforeDate": moment("Before this time (exclusive)"),
    "limit": limit(50),
    "offset": OFFSET,
    "mode": {"type": "string", "enum": ["short", "full", "json"], "default": "short",
             "description": "short: one line each; full: source, body, data and scopes too; json: the page object."},
    "text": text("Full-text search (BM25) over event and body; best matches first, records carry a score.", 1024),
    "entity": ENTITY_ID | {"description": "Only observations about this entity (type/key)."},
    "at": AT,
})
def observation_query(repo: Any, scopeIds: list[str] | None = None, type: str | None = None,  # noqa: A002, N803 - seed 002's names
                      source: str | None = None, afterDate: str | int | None = None, beforeDate: str | int | None = None,  # noqa: N803
                      limit: int = 50, offset: int = 0, mode: str = "short", text: str | None = None,
                      entity: str | None = None, at: str | None = None) -> Any:
    """Observations that match every filter given (AND), newest first (timestamp, then id), or
    by relevance with `text`. Answers with the text of `obsrepo query` in the mode asked:
    `short` lines `[<ISO ms>] [<type>] <event>`, `full` entries with source, body, data and
    scopes, or `json`, the page object {observations, total, limit, offset, at_commit} (also
    as structured content). "No observations found." when nothing matches (text modes)."""
    request = QueryRequest(scopes=tuple(scopeIds or ()), type=type, source=source, entity=entity, text=text,
                           after=instant(afterDate, "afterDate"), before=instant(beforeDate, "beforeDate"),
                           limit=limit, offset=offset)
    if request.after and request.before and request.after >= request.before:
        raise UsageError("afterDate must be earlier than beforeDate", parameter="afterDate")
    page = repo.query(request, at=at)
    if mode == "json":
        return page
    return Text(render_observations(page, mode))
