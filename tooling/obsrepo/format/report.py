"""Problems found in documents, and the report that collects them."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

ERROR = "error"
WARNING = "warning"

NOT_WRITTEN = "(not written)"  # the path of a problem of a document `new` refused: no file names it

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


def printable(text: str) -> str:
    """One line of output whatever a file name holds: control characters (a newline in a path
    could forge a line of the report) are written as escapes, as git quotes them."""
    if not _CONTROL.search(text):
        return text
    named = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
    return _CONTROL.sub(lambda m: named.get(m.group(), f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                                              else f"\\u{ord(m.group()):04x}"), text)


def plural(count: int, word: str, words: str | None = None) -> str:
    """`1 observation`, `2 observations`: every count the product prints agrees with its noun."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def text_line(path: str, line: int, col: int, code: str, message: str, rule: str) -> str:
    return printable(f"{path}:{line}:{col} {code} {message} [{rule}]")


@dataclass(frozen=True, order=True)
class Issue:
    """One problem, located at `path:line:col` (1-based; 1:1 when the whole file is at fault)."""

    path: str
    line: int
    col: int
    code: str
    rule: str
    message: str
    severity: str = ERROR
    commit: str = ""  # the full sha of the commit that made the problem, when one did

    def as_text(self) -> str:
        return text_line(self.path, self.line, self.col, self.code, self.message, self.rule)

    def as_dict(self) -> dict:
        data = asdict(self)
        commit = data.pop("commit")
        if commit:
            data["details"] = {"commit": commit}
        return data


@dataclass
class Report:
    checked: int = 0
    issues: list[Issue] = field(default_factory=list)
    # documents read and analysed, the others served by a cache (check): never in the report
    # itself, whose bytes depend on the repository only (OBSREPO_DEBUG=1 prints it to stderr)
    read: int | None = None

    @property
    def ok(self) -> bool:
        return not any(i.severity == ERROR for i in self.issues)

    def sorted_issues(self) -> list[Issue]:
        return sorted(set(self.issues))

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "issues": [i.as_dict() for i in self.sorted_issues()],
        }
