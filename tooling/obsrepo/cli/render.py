"""Renderers for check reports: text, one JSON object, or GitHub annotations."""

from __future__ import annotations

import json

import click

from ..ops.surface import Report, plural
from ..ops.surface import stamp_ms as _stamp_ms


def _escape(value: str, *, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def render_report(report: Report, output_format: str) -> None:
    issues = report.sorted_issues()
    if output_format == "json":
        click.echo(json.dumps(report.as_dict(), ensure_ascii=False))
        return
    if output_format == "github":
        for i in issues:
            level = "error" if i.severity == "error" else "warning"
            where = f"file={_escape(i.path, prop=True)},line={i.line},col={i.col}"
            click.echo(f"::{level} {where}::{_escape(f'{i.code} {i.message} [{i.rule}]')}")
    else:
        for i in issues:
            click.echo(i.as_text())
    errors = sum(1 for i in issues if i.severity == "error")
    summary = f"checked {plural(report.checked, 'document')}: "
    if not report.checked and not errors:  # a deletion is a problem without a document to read
        summary = "no documents found (observations live under observations/, beliefs under comprehension/): "
    summary += "ok" if report.ok else plural(errors, "problem")
    click.echo(summary, err=True)


def render_snapshot(result: dict) -> str:
    head = f"{result['entity_id']} ({plural(result['observation_count'], 'observation')}, last {result['last_observation_at']})"
    if result.get("merged_from"):
        head += f" — {result['merged_from']} was merged into it"
    lines = [head]
    if result["deleted"]:
        lines.append("deleted")
    for name, value in result["snapshot"].items():
        source = result["provenance"][name]
        source = ", ".join(source) if isinstance(source, list) else source
        lines.append(f"  {name} = {json.dumps(value, ensure_ascii=False)}    ← {source}")
    for name, candidates in (result.get("explain") or {}).items():
        lines.append(f"  {name}:")
        for c in candidates:
            mark = "*" if c["won"] else " "
            lines.append(f"   {mark} {json.dumps(c['value'], ensure_ascii=False)}  {c['observation_id']}  "
                         f"priority={c['priority']} specificity={c['specificity']} {c['timestamp']}  ({c['rule']})")
    return "\n".join(lines)


def render_generic(result: dict) -> str:
    """A readable text form of any command's JSON result."""
    if "changes" in result:
        return "\n".join(f"{c['committed_at']} {c['commit'][:12]} {c['field']}: {json.dumps(c['old'], ensure_ascii=False)} → "
                         f"{json.dumps(c['new'], ensure_ascii=False)}  ({c['observation_id']}, {c['author']})"
                         for c in result["changes"]) or "No changes."
    if "events" in result:
        return "\n".join(f"{e['event_timestamp']} {e['event_type']} {e['entity_id']}"
                         + (f" .{e['field']}" if e["field"] else "") + f"  ({e['observation_id']})"
                         for e in result["events"]) or "No events."
    lines = []
    for entity in result.get("entities", []):
        lines.append(f"{entity['entity_id']}  ({plural(entity['observation_count'], 'observation')}, last {entity['last_observation_at']})")
    for rel in result.get("relationships", []):
        lines.append(f"{rel['source_entity_id']} -{rel['type']}-> {rel['target_entity_id']}  ({rel['observation_id']})")
    if "observations" in result:
        lines += [f"[{_stamp_ms(r['timestamp'])}] [{r['type'] or '-'}] {r['event']}" for r in result["observations"]]
    if "total" in result:
        lines.append(f"({result['total']} in all)")
    return "\n".join(lines)
