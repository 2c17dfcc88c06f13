"""The text modes of `query` (seed 002's `short` and `full`, byte for byte) and its JSON mode;
shared by the command line and the MCP server's `observation_query`."""

from __future__ import annotations

import json


def stamp_ms(iso: str) -> str:
    """`2026-02-13T10:25:00Z` → `2026-02-13T10:25:00.000Z` (the short and full modes)."""
    from datetime import datetime

    moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def render_observations(page: dict, output_format: str) -> str:
    """The output modes of `query`: short, full, json, jsonl."""
    records = page["observations"]
    if output_format == "json":
        return json.dumps(page, ensure_ascii=False)
    if output_format == "jsonl":
        return "\n".join(json.dumps(r, ensure_ascii=False) for r in records)
    if not records:
        return "No observations found."
    if output_format == "short":
        return "\n".join(f"[{stamp_ms(r['timestamp'])}] [{r['type'] or '-'}] {r['event']}" for r in records)
    entries = []
    for r in records:
        lines = [f"[{stamp_ms(r['timestamp'])}] [{r['type'] or '-'}] source={r['source']}", r["event"]]
        body = (r["body"] or "").strip()
        if body:
            lines.append(body)
        if r["data"] is not None:
            lines.append(json.dumps(r["data"], ensure_ascii=False, separators=(",", ":")))  # compact: {"status":"new"}
        if r["scope"]:
            lines.append("scopes: " + ", ".join(r["scope"]))
        entries.append("\n".join(lines))
    return "\n\n".join(entries)
