"""Problems found in documents, and the report that collects them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

ERROR = "error"
WARNING = "warning"


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

    def as_text(self) -> str:
        return f"{self.path}:{self.line}:{self.col} {self.code} {self.message} [{self.rule}]"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Report:
    checked: int = 0
    issues: list[Issue] = field(default_factory=list)

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
