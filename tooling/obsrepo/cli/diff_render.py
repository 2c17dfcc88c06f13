"""Text and Markdown for `obsrepo diff` and `obsrepo show`.

Markdown is for a GitHub job summary or a pull request body: a headline, one table per
changed entity, `<details>` for long lists, and a cut (with a count) past `MARKDOWN_LIMIT`
characters. Every value from a document is HTML-escaped inside `<code>`: an observation's
text can never become markup in a reviewer's page."""

from __future__ import annotations

import html
import json
from typing import Any

from ..ops.surface import plural as _plural
from ..ops.surface import printable

MARKDOWN_LIMIT = 60_000
VALUE_LIMIT = 200  # characters of one value shown in a table cell
LIST_OPEN = 10  # lists longer than this fold into <details>


def value_text(value: Any) -> str:
    return "–" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _short(value: Any) -> str:
    text = value_text(value)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


def _escaped(text: str) -> str:
    """Text that stays text in a Markdown table cell: HTML-escaped, one line, no column break."""
    return html.escape(text.replace("\n", " "), quote=False).replace("|", "&#124;")


def _code(text: str) -> str:
    return f"<code>{_escaped(text)}</code>" if text else ""


def _prose(text: str) -> str:
    """A message of the product's own, whose `name` spans mark code: each becomes its own
    <code> and the rest stays text (a backtick inside <code> would be shown literally)."""
    parts = _escaped(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no span to mark, shown as the character it is
        return _escaped(text).replace("`", "&#96;")
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


def headline_counts(diff: dict[str, Any]) -> list[str]:
    counts: dict[str, int] = {}
    for entry in diff["entities"]:
        counts[entry["change"]] = counts.get(entry["change"], 0) + 1
    parts = [_plural(len(diff["added"]), "observation") + " added"]
    for key in ("modified", "removed"):
        if diff[key]:
            parts.append(f"{len(diff[key])} {key}")
    kinds = [f"{counts[k]} {k}" for k in ("changed", "created", "restored", "deleted", "merged") if k in counts]
    if kinds:
        parts.append("entities " + ", ".join(kinds))
    if diff["losing"]:
        parts.append(f"{len(diff['losing'])} losing")
    if diff["retracted"]:
        parts.append(_plural(len(diff["retracted"]), "retraction"))
    if diff["comprehensions"]:
        parts.append(_plural(len(diff["comprehensions"]), "belief") + " updated")
    contests = diff.get("contests") or {}
    for key in ("opened", "closed"):
        if contests.get(key):
            parts.append(_plural(len(contests[key]), "contest") + f" {key}")
    return parts


def contest_sentence(contest: dict[str, Any]) -> str:
    """`field` of `entity`: VALUE from SOURCE (winner) against OTHER from SOURCE …, in words."""
    winner = contest["winner"]
    others = "; ".join(f"{_short(c['value'])} from {c['source']} ({c['observation_id']})" for c in contest["challengers"])
    return (f"{contest['entity_id']} {contest['field']}: {_short(winner['value'])} from {winner['source']} "
            f"({winner['observation_id']}) against {others}")


# -- text ----------------------------------------------------------------------------------

def render_text(diff: dict[str, Any]) -> str:
    verdict = "valid" if diff["valid"] else f"REFUSED by check ({_plural(len(diff['problems']), 'problem')})"
    out = [f"diff {diff['base'][:12]}..{diff['head'][:12]}: {', '.join(headline_counts(diff))}; {verdict}"]
    summary = diff["summary"]
    if diff["added"]:
        out.append("")
        out.append(f"observations added ({len(diff['added'])}):")
        for key in ("by_type", "by_source", "by_tenant"):
            out.append(f"  {key.replace('_', ' ')}: " + ", ".join(f"{k} {v}" for k, v in summary[key].items()))
        out += [f"  {i}" for i in diff["added"]]
    for key in ("modified", "removed"):
        if diff[key]:
            out.append("")
            out.append(f"observations {key} (check refuses this): " + ", ".join(diff[key]))
    if diff["entities"]:
        out.append("")
        out.append("entities:")
        for entry in diff["entities"]:
            extra = f" into {entry['into']}" if entry["change"] == "merged" else ""
            out.append(f"  {entry['entity_id']}: {entry['change']}{extra}")
            for f in entry["fields"]:
                winner = f["observation_id"]
                winner = ", ".join(winner) if isinstance(winner, list) else (winner or "–")
                out.append(f"    {f['field']}: {_short(f['old'])} → {_short(f['new'])}  ({winner}, {f['rule']})")
    for losing in diff["losing"]:
        out.append("")
        if losing["deleted"]:
            out.append(f"{losing['observation_id']} changes nothing: {losing['entity_id']} is deleted")
            continue
        out.append(f"{losing['observation_id']} changes nothing: it loses every field of {losing['entity_id']}")
        for f in losing["fields"]:
            out.append(f"    {f['field']}: {_short(f['value'])} loses to {_short(f['current'])} "
                       f"({f['winner'] or '–'}, {f['rule']})")
    if diff["retracted"]:
        out.append("")
        out.append("retractions:")
        for r in diff["retracted"]:
            withdrawn = ", ".join(f"{k}={_short(v)}" for k, v in r["fields"].items()) or "no fields"
            winning = f"; it was winning {', '.join(r['was_winning'])}" if r["was_winning"] else ""
            out.append(f"  {r['observation_id']} withdraws {r['target']} ({r['entity_id'] or 'no entity'}): {withdrawn}{winning}")
            out += [f"    relation {rel['type']} → {rel['target_entity_id']}" for rel in r["relations"]]
    if diff["relations"]:
        out.append("")
        out.append("relations:")
        out += [f"  {r['change']}: {r['source_entity_id']} {r['type']} {r['target_entity_id']} ({r['observation_id']})"
                for r in diff["relations"]]
    contests = diff.get("contests") or {}
    for key in ("opened", "closed"):
        if contests.get(key):
            out.append("")
            out.append(f"contests {key} (two sources disagree about the same time; only a tie-break chose):")
            out += [f"  {contest_sentence(c)}" for c in contests[key]]
    if diff["comprehensions"]:
        out.append("")
        out.append("comprehension:")
        out += [f"  {_comprehension_line(c)}" for c in diff["comprehensions"]]
    if diff["problems"]:
        out.append("")
        out.append("problems (check --base refuses the change):")
        out += [f"  {p['path']}:{p['line']}:{p['col']} {p['code']} {p['message']} [{p['rule']}]" for p in diff["problems"]]
    return "\n".join(printable(line) for line in out)


def _comprehension_line(c: dict[str, Any]) -> str:
    if c["change"] == "deleted":
        return f"{c['id']} deleted (version {c['old_version']}, {c['old_confidence']})"
    version = f"version {c['new_version']}" if c["change"] == "added" else f"version {c['old_version']} → {c['new_version']}"
    confidence = (f"confidence {c['prior_confidence']} (prior) → {c['new_confidence']}" if c["change"] == "added"
                  else f"confidence {c['old_confidence']} → {c['new_confidence']} (prior {c['prior_confidence']})")
    cited = f"; cites {', '.join(c['observations_added'])}" if c["observations_added"] else ""
    return f"{c['id']} {c['change']}: {version}, {confidence}{cited}"


# -- markdown ------------------------------------------------------------------------------

def render_markdown(diff: dict[str, Any]) -> str:
    """Sections in order; the first that would pass the limit and all after it are cut."""
    verdict = ("**✅ valid**: `obsrepo check` accepts this change" if diff["valid"] else
               f"**❌ refused**: `obsrepo check` finds {_plural(len(diff['problems']), 'problem')}")
    head = [f"## obsrepo diff `{diff['base'][:12]}..{diff['head'][:12]}`", "",
            verdict + " · " + " · ".join(headline_counts(diff)), ""]
    sections = _sections(diff)
    out = "\n".join(head)
    for number, section in enumerate(sections):
        if len(out) + len(section) + 200 > MARKDOWN_LIMIT:
            left = len(sections) - number
            out += (f"\n_… {_plural(left, 'more section')} cut at {MARKDOWN_LIMIT:,} characters; "
                    "run `obsrepo diff` for the whole review._\n")
            break
        out += "\n" + section
    return out.rstrip("\n") + "\n"


def _details(summary: str, lines: list[str]) -> str:
    body = "\n".join(lines)
    if len(lines) <= LIST_OPEN:
        return f"{summary}\n\n{body}\n"
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>\n"


def _sections(diff: dict[str, Any]) -> list[str]:
    sections = []
    if diff["problems"]:
        rows = [f"| {_code(p['path'])}:{p['line']} | `{p['code']}` | {_prose(p['message'])} | `{p['rule']}` |"
                for p in diff["problems"]]
        sections.append("### ❌ What `check` refuses\n\n| where | code | problem | rule |\n|---|---|---|---|\n"
                        + "\n".join(rows) + "\n")
    for entry in diff["entities"]:
        title = f"### `{entry['entity_id']}` — {entry['change']}"
        if entry["change"] == "merged":
            sections.append(f"{title} into `{entry['into']}`\n")
            continue
        rows = []
        for f in entry["fields"]:
            winner = f["observation_id"]
            winner = ", ".join(winner) if isinstance(winner, list) else (winner or "")
            rows.append(f"| `{f['field']}` | {_code(_short(f['old']))} | {_code(_short(f['new']))} | "
                        f"{_code(winner)} | {f['rule']} |")
        table = "| field | old | new | observation | rule |\n|---|---|---|---|---|\n" + "\n".join(rows)
        sections.append(f"{title}\n\n" + (table if rows else "_no fields_") + "\n")
    for losing in diff["losing"]:
        if losing["deleted"]:
            sections.append(f"### `{losing['observation_id']}` changes nothing\n\n`{losing['entity_id']}` is deleted.\n")
            continue
        rows = [f"| `{f['field']}` | {_code(_short(f['value']))} | {_code(_short(f['current']))} | "
                f"{_code(f['winner'] or '')} | {f['rule']} |" for f in losing["fields"]]
        sections.append(f"### `{losing['observation_id']}` changes nothing\n\nIt loses every field of "
                        f"`{losing['entity_id']}`:\n\n| field | its value | stays | winner | rule |\n"
                        "|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    contests = diff.get("contests") or {}
    if contests.get("opened"):
        sections.append(_contest_section(f"### ⚖️ This pull request opens {_plural(len(contests['opened']), 'contest')}",
                                         "Two sources disagree about the same time, and only a tie-break chose the "
                                         "value kept; a correction (`obsrepo correct`) settles it.", contests["opened"]))
    if contests.get("closed"):
        sections.append(_contest_section(f"### This pull request closes {_plural(len(contests['closed']), 'contest')}",
                                         "", contests["closed"]))
    if diff["retracted"]:
        rows = [f"| {_code(r['observation_id'])} | {_code(r['target'])} | {_code(r['entity_id'] or '')} | "
                f"{_code(', '.join(f'{k}={_short(v)}' for k, v in r['fields'].items()))} | "
                f"{', '.join(r['was_winning']) or '–'} |" for r in diff["retracted"]]
        sections.append("### Retractions\n\n| retraction | withdraws | entity | values withdrawn | was winning |\n"
                        "|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    if diff["relations"]:
        lines = [f"- {r['change']}: {_code(r['source_entity_id'] or '')} **{r['type']}** {_code(r['target_entity_id'])} "
                 f"({_code(r['observation_id'])})" for r in diff["relations"]]
        sections.append(_details(f"### Relations ({len(lines)})" if len(lines) <= LIST_OPEN else
                                 f"<b>Relations ({len(lines)})</b>", lines))
    if diff["comprehensions"]:
        lines = [f"- {_code(_comprehension_line(c))}" for c in diff["comprehensions"]]
        sections.append(_details("### Beliefs (comprehension)", lines))
    if diff["added"]:
        s = diff["summary"]
        counts = "; ".join(f"{key.split('_')[1]}: " + ", ".join(f"{_code(k)} {v}" for k, v in s[key].items())
                           for key in ("by_type", "by_source", "by_tenant"))
        lines = [f"- {_code(i)}" for i in diff["added"]]
        sections.append(f"### Observations added ({len(diff['added'])})\n\n{counts}\n\n"
                        + _details(f"<b>{_plural(len(lines), 'id')}</b>", lines))
    return sections


def _contest_section(title: str, lead: str, contests: list[dict[str, Any]]) -> str:
    rows = []
    for c in contests:
        winner = c["winner"]
        others = "<br>".join(f"{_code(_short(o['value']))} from {_code(o['source'])} ({_code(o['observation_id'])})"
                             for o in c["challengers"])
        rows.append(f"| {_code(c['entity_id'])} | {_code(c['field'])} | {_code(_short(winner['value']))} from "
                    f"{_code(winner['source'])} ({_code(winner['observation_id'])}) | {others} |")
    table = "| entity | field | kept | against |\n|---|---|---|---|\n" + "\n".join(rows)
    return f"{title}\n\n" + (f"{_prose(lead)}\n\n" if lead else "") + table + "\n"


# -- show ----------------------------------------------------------------------------------

def render_show(shown: dict[str, Any]) -> str:
    out = [f"{shown['id']}  {shown['path']}",
           f"added by commit {shown['commit']} ({shown['author']}, {shown['committed_at']})", ""]
    width = max((len(k) for k in shown["front_matter"]), default=0)
    out += [f"  {key.ljust(width)}  {_short(value)}" for key, value in shown["front_matter"].items()]
    if shown["body"]:
        out += ["", *shown["body"].split("\n")]
    out.append("")
    for key in ("corrects", "retracts"):
        for target in shown[key]:
            what = (f"{target['entity'] or 'no entity'}: {target['event']}" if target["exists"] else "not found")
            out.append(f"{key} {target['id']} ({what})")
    if shown["corrected_by"]:
        out.append(f"corrected by {', '.join(shown['corrected_by'])}")
    if shown["retracted_by"]:
        out.append(f"retracted by {', '.join(shown['retracted_by'])}: it counts for nothing")
    if shown["entity_id"]:
        if shown.get("entity_deleted"):
            out.append(f"{shown['entity_id']} is deleted: it wins nothing")
        elif shown["wins"]:
            out.append(f"wins on {shown['entity_id']}: " + ", ".join(f"{k}={_short(v)}" for k, v in shown["wins"].items()))
        else:
            out.append(f"wins no field of {shown['entity_id']}")
    return "\n".join(printable(line) for line in out).rstrip("\n")
