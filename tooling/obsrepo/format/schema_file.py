"""The one reader of the repository's schema files (`schemas/entities/<type>.yaml`,
`schemas/retention.yaml`): plain YAML read with the strict policy of a document's front matter
(they have no fences, so the reader adds them and moves every position back by one line), and
the one way their checks report a problem at a key."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import errors
from .report import Issue
from .suggest import did_you_mean


class SchemaFile:
    """One schema file: `front` (the mapping, or None when the YAML itself is refused) and the
    `issues` found so far, each of rule `rule` once the YAML reads."""

    def __init__(self, path: str, data: bytes, rule: str) -> None:
        from .document import read_document

        self.path, self.rule = path, rule
        self._doc = read_document(path, b"---\n" + data.rstrip(b"\n") + b"\n---\n")
        self.issues = [Issue(i.path, max(i.line - 1, 1), i.col, i.code, i.rule, i.message) for i in self._doc.issues]
        self.front: dict[str, Any] | None = self._doc.front if not self.issues else None

    def bad(self, key_path: tuple, message: str) -> None:
        """A problem at the value of `key_path`."""
        line, col = self._doc.loc(key_path)
        self.issues.append(Issue(self.path, max(line - 1, 1), col, errors.VALIDATION_ERROR, self.rule, message))

    def unknown_keys(self, mapping: dict[str, Any], known: Iterable[str], where: tuple = (), context: str = "") -> None:
        """Each key of `mapping` (at `where`) that is not `known`, with the closest known key."""
        known = tuple(known)
        for key in sorted(set(mapping) - set(known)):
            self.bad((*where, key), f"unknown key '{key}'{context}{did_you_mean(key, known)}")
