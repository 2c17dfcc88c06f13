"""Renderers for check reports: text, one JSON object, or GitHub annotations."""

from __future__ import annotations

import json

import click

from .report import Report


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
            click.echo(f"::{level} file={_escape(i.path, prop=True)},line={i.line},col={i.col}::{_escape(f'{i.code} {i.message} [{i.rule}]')}")
    else:
        for i in issues:
            click.echo(i.as_text())
    errors = sum(1 for i in issues if i.severity == "error")
    summary = f"checked {report.checked} document{'s' if report.checked != 1 else ''}: "
    summary += "ok" if report.ok else f"{errors} problem{'s' if errors != 1 else ''}"
    click.echo(summary, err=True)
