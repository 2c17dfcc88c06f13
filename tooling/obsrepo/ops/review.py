"""Review operations: the gate (`check`), one document judged before it is proposed
(`check_document`), what a change does to the reduced truth (`diff`), and the index build."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from ..errors import UsageError
from .fields import Field, text_field
from .registry import Answer, operation
from .session import Session


@dataclass(frozen=True)
class Check:
    """Every document, the repository rules and, with `base` or `staged`, immutability commit
    by commit. `paths` are relative to `cwd` (default the root)."""

    paths: tuple[str, ...] = ()
    base: Annotated[str | None, Field("Also refuse changes to existing observations since REV (its merge base with HEAD), "
                                      "commit by commit.", placeholder="REV")] = None
    staged: Annotated[bool, Field("Check what is staged for the next commit against HEAD (for pre-commit).")] = False
    cwd: str | None = None
    progress: Callable[[int, int], None] | None = None


@dataclass(frozen=True)
class CheckReport:
    report: Any  # gate.report.Report: `.ok`, `.issues`

    @property
    def ok(self) -> bool:
        return bool(self.report.ok)

    def to_json(self) -> dict[str, Any]:
        return dict(self.report.as_dict())


@operation("check", "reads")
def check(session: Session, request: Check) -> CheckReport:
    from ..gate.check import CheckRequest, apply_check, plan_check

    plan = plan_check(session.git, CheckRequest(request.cwd or session.root, tuple(request.paths), request.base,
                                                request.staged, progress=request.progress))
    return CheckReport(apply_check(session.git, plan, request.progress))  # git as the session found it, once


MAX_DOCUMENT = 2 * 1024 * 1024  # characters; the per-document rules refuse more than 1 MiB


@dataclass(frozen=True)
class CheckDocument:
    """`check`'s JSON report for one whole document's text, as if it were added at HEAD."""

    text: Annotated[str, text_field("The whole document: front matter between --- lines, then the Markdown body.", MAX_DOCUMENT)]


class DocumentReport(Answer):
    """{ok, checked, issues: [{code, rule, path, line, col, message}]}."""


@operation("check_document", "reads")
def check_document(session: Session, request: CheckDocument) -> DocumentReport:
    """A tenant-bound caller's document is judged against its tenant's documents only."""
    from ..gate.document import check_text

    try:
        data = request.text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("the document is not valid Unicode text", parameter="text") from None
    head = session.git.resolve("HEAD") if session.git.has_head() else None
    return DocumentReport(check_text(session.git, head, data, session.binding.as_dict()).as_dict())


@dataclass(frozen=True)
class Diff:
    """What BASE..HEAD changes in the truth (docs/design.md §12); HEAD defaults to HEAD, BASE
    to its merge base with the default branch. `check=False` leaves out the check of the change."""

    base: str | None = None
    head: str | None = None
    check: bool = True


class Review(Answer):
    """The review of §12: entities, fields, challengers, relations, the check."""


@operation("diff", "reads")
def diff(session: Session, request: Diff) -> Review:
    from ..read.diff import default_base, review
    from ..read.scope import ReadScope

    head = session.rev_or_head(request.head, "head").sha
    base = session.rev(request.base, "base").sha if request.base is not None else default_base(session.git, head)
    tenant = session.binding.as_dict()

    def work(con: Any) -> dict[str, Any]:
        ceiling = session.ceiling.level  # a server's ceiling (docs/design.md §17) holds for its review page too
        scopes = [ReadScope(con, session.git, base, tenant, ceiling=ceiling), ReadScope(con, session.git, head, tenant, ceiling=ceiling)]
        try:
            if tenant and request.check:  # the check sees every tenant's documents; the report is filtered
                scopes.append(ReadScope(con, session.git, head, {}))
            return review(scopes[0], scopes[1], scopes[-1] if request.check else None)
        finally:
            for scope in scopes:
                scope.close()

    return Review(session.read(work, scoped=False, follow_head=False))


@dataclass(frozen=True)
class Index:
    """Build or update the index to `rev` (default HEAD). With `strict`, invalid documents in
    history leave the previous index published."""

    rev: Annotated[str | None, Field("The commit to index (default HEAD).", placeholder="REV")] = None
    full: Annotated[bool, Field("Rebuild from scratch instead of updating.")] = False
    strict: Annotated[bool, Field("Exit 1 (and keep the previous index) if history holds invalid documents.")] = False
    progress: Callable[[int, int], None] | None = None


@dataclass(frozen=True)
class Built:
    result: Any  # index.build.BuildResult

    def to_json(self) -> dict[str, Any]:
        return dict(self.result.as_dict())


@operation("index", "writes")
def index(session: Session, request: Index) -> Built:
    return Built(session.build(session.rev_or_head(request.rev, "rev"), full=request.full, strict=request.strict,
                               progress=request.progress))
