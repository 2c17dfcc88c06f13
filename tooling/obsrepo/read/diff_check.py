"""The parts of a review that read documents rather than snapshots: the check of the change
(its context looked up in the index) and comprehension documents added, edited or deleted."""

from __future__ import annotations

import json
from typing import Any

from ..format.analyze import analyze
from ..gate.change import Wanted, check_change
from ..gitstore import Change, Git
from ..index.lookup import named_observations
from .scope import ReadScope


def change_problems(git: Git, base: str, head: str, scope: ReadScope) -> list[dict[str, Any]]:
    """check_change's issues as dicts, sorted; `scope` reads HEAD with no tenant binding."""
    observations = named_observations(scope.rows, "visible")

    def context(wanted: Wanted, leave_out: set[str]) -> list[tuple[str, dict[str, Any]]]:
        found = observations(wanted, leave_out)
        for entry in git.ls_tree(head, "comprehension"):
            name = entry.path.rsplit("/", 1)[-1]
            if entry.path not in leave_out and name.endswith(".md") and name[:-3] in wanted.ids:
                found.append((entry.path, {"kind": "comprehension", "id": name[:-3], "version": 1,
                                           "observations": [], "loc": {}}))
        return found

    report = check_change(git, base, head, context)
    return [issue.as_dict() for issue in report.sorted_issues()]


def comprehension_changes(git: Git, scope: ReadScope, changes: list[Change]) -> list[dict[str, Any]]:
    """Comprehension documents added, edited or deleted: confidence prior → posterior, version,
    statement, and the observations newly cited (those the scope can see)."""
    edits = [c for c in changes if c.path.startswith("comprehension/") and c.path.endswith(".md")]
    blobs = sorted({sha for c in edits for sha in (c.old_sha, c.new_sha) if set(sha) != {"0"}})
    contents = dict(git.read_blobs(blobs))
    entries = []
    for change in edits:
        old = _record(change.path, contents.get(change.old_sha))
        new = _record(change.path, contents.get(change.new_sha))
        if old is None and new is None:
            continue  # neither side is a valid document: `problems` says why
        kind = "added" if old is None else "deleted" if new is None else "edited"
        now = new or old
        assert now is not None
        cited = [o for o in (new or {}).get("observations", []) if o not in (old or {}).get("observations", [])]
        entries.append({
            "id": now["id"], "path": change.path, "change": kind, "topic": now["topic"],
            "old_version": old and old["version"], "new_version": new and new["version"],
            "prior_confidence": now["prior"]["confidence"],
            "old_confidence": old and old["posterior"]["confidence"],
            "new_confidence": new and new["posterior"]["confidence"],
            "old_statement": old and old["posterior"]["statement"],
            "new_statement": new and new["posterior"]["statement"],
            "observations_added": _visible_ids(scope, cited),
        })
    return sorted(entries, key=lambda e: e["path"])


def _record(path: str, data: bytes | None) -> dict[str, Any] | None:
    if data is None:
        return None
    record = analyze(path, data, with_record=True).record
    if record is None:
        return None
    return {**record, "prior": json.loads(record["prior"]), "posterior": json.loads(record["posterior"])}


def _visible_ids(scope: ReadScope, ids: list[str]) -> list[str]:
    if not ids:
        return []
    seen = {r[0] for r in scope.rows("SELECT id FROM visible WHERE id IN (SELECT unnest(?::VARCHAR[]))", [ids])}
    return [i for i in ids if i in seen]
