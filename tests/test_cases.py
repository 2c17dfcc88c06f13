"""The data-driven corpus: documents on disk, expectations beside them.

    tests/cases/invalid/<name>.md  + <name>.expect.json   {"path", "issues": [{"line", "col", "code", "rule", "message"?}]}
    tests/cases/valid/<name>.md    + <name>.expect.json   {"path", "issues": [], "front"?: {...}, "body"?: "..."}
    tests/cases/repo/<name>/{observations,comprehension}/… + expected.json   {"issues": [{"path", "code", "rule"}]}

`path` is the repository path a single document is checked under (so file name = id rules
apply). For single documents the issues are the EXACT set, compared as sorted
(line, col, code, rule), and an issue's `message`, when given, is a part of what it says (a
hint, a did-you-mean); `front` lists key/values the parsed front matter must hold with the
same JSON types (`"0755"` stays a string, `12` an int, `1.5` a float). Repository cases run
through the real command line, `python -m obsrepo check --format json`, in a copy of the folder
made a git repository (`git init`, nothing committed: `check` refuses a folder outside git).

Two size cases are generated here rather than committed (a 256 KiB front matter, a 1 MiB
document), each with its counterpart exactly at the limit.

Add a case by adding files; add a rule by adding it to DOCUMENTED_RULES (and to docs/guide/errors.md).
Product bugs that a case exposes are listed in KNOWN_BUGS (strict xfail: fixing the bug makes
the marker fail until it is removed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from obsrepo.format import rules
from obsrepo.format.analyze import analyze
from obsrepo.format.document import read_document
from obsrepo.format.rule_list import RULES
from obsrepo.gate import graph

CASES = Path(__file__).parent / "cases"
ERRORS_GUIDE = Path(__file__).parent.parent / "docs" / "guide" / "errors.md"

# Every `rule` the product may report. A rule that is not here (and in docs/guide/errors.md) is a failure.
DOCUMENTED_RULES = frozenset(RULES)  # the product's rule list

# Documented rules this corpus cannot reach: they need git history (--base/--staged), a symlink,
# a submodule or a .gitattributes. tests/test_immutability.py covers them.
NOT_REACHABLE_HERE = frozenset({
    "modified", "deleted", "mode-changed", "type-changed", "symlink", "submodule", "comprehension-edit",
    "git-attributes", "entity-schema",
    # a warning, and a file outside the document folders: tests/test_steward.py covers them
    "classification-below-content", "retention-policy",
    # a rule of the write path (a correction's value against the current one): tests/test_type_change.py
    "type-change",
})

# Cases that expose a product bug: "<kind>/<name>" → what is wrong. Remove an entry once fixed.
KNOWN_BUGS: dict[str, str] = {}

# The invalid cases whose output is also checked through the real command line.
CLI_CASES = ("yaml-duplicate-key", "id-filename-mismatch", "encoding-bom", "relation-type-lowercase",
             "id-filename-mismatch-with-schema-problems")
# A path given to `check` that does not exist (checked in an empty folder).
MISSING_PATH = "observations/2026/02/13/obs-20260213-000000-0404.md"
MISSING_PATH_ISSUES = [(MISSING_PATH, 1, 1, "VALIDATION_ERROR", "file-missing")]

FRONT_MATTER_LIMIT = 256 * 1024  # docs/design.md §2.2, in bytes between the fences
DOCUMENT_LIMIT = 1024 * 1024


@dataclass
class Case:
    kind: str  # "valid" | "invalid"
    name: str
    data: bytes
    path: str
    expect: dict[str, Any] = field(default_factory=dict)
    generated: bool = False

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.name}"

    def expected_issues(self) -> list[tuple]:
        return sorted((i["line"], i["col"], i["code"], i["rule"]) for i in self.expect["issues"])


def _load(kind: str) -> list[Case]:
    cases = []
    for md in sorted((CASES / kind).glob("*.md")):
        expect = json.loads(md.with_name(md.stem + ".expect.json").read_text("utf-8"))
        cases.append(Case(kind, md.stem, md.read_bytes(), expect["path"], expect))
    return cases


# --- generated size cases ----------------------------------------------------------------

def _head(doc_id: str) -> str:
    return (f"spec: observation/v1\nid: {doc_id}\ntimestamp: 2026-02-13T10:25:00Z\n"
            "source: agent/tester\nevent: A big document\n")


def _front_of_size(name: str, size: int) -> Case:
    """A document whose front matter (the bytes between the fences) is exactly `size` bytes."""
    doc_id = f"obs-case-{name}"
    head = _head(doc_id)
    filler = size - len(head) - len('x-filler: ""\n')
    front = head + 'x-filler: "' + "a" * filler + '"\n'
    assert len(front.encode()) == size
    return Case("", name, ("---\n" + front + "---\n\nBody.\n").encode(), f"observations/2026/02/13/{doc_id}.md",
                generated=True)


def _document_of_size(name: str, size: int) -> Case:
    doc_id = f"obs-case-{name}"
    start = "---\n" + _head(doc_id) + "---\n\n"
    line = "A line of a very long body.\n"
    body = (line * (size // len(line) + 1))[: size - len(start) - 1] + "\n"
    data = (start + body).encode()
    assert len(data) == size
    return Case("", name, data, f"observations/2026/02/13/{doc_id}.md", generated=True)


def _generated_invalid() -> list[Case]:
    front = _front_of_size("front-matter-too-large", FRONT_MATTER_LIMIT + 1)
    doc = _document_of_size("document-too-large", DOCUMENT_LIMIT + 1)
    front.expect = {"issues": [{"line": 2, "col": 1, "code": "VALIDATION_ERROR", "rule": "front-matter-too-large"}]}
    doc.expect = {"issues": [{"line": 1, "col": 1, "code": "VALIDATION_ERROR", "rule": "document-too-large"}]}
    for case in (front, doc):
        case.kind = "invalid"
    return [front, doc]


def _generated_valid() -> list[Case]:
    front = _front_of_size("front-matter-at-limit", FRONT_MATTER_LIMIT)
    doc = _document_of_size("document-at-limit", DOCUMENT_LIMIT)
    for case in (front, doc):
        case.kind = "valid"
        case.expect = {"issues": []}
    return [front, doc]


INVALID = _load("invalid") + _generated_invalid()
VALID = _load("valid") + _generated_valid()
REPO_CASES = sorted(p.name for p in (CASES / "repo").iterdir() if p.is_dir())


def _params(cases: list[Case]) -> list[Any]:
    out = []
    for case in cases:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[case.key])] if case.key in KNOWN_BUGS else []
        out.append(pytest.param(case, id=case.name, marks=marks))
    return out


def _issues(path: str, data: bytes) -> list:
    analysis = analyze(path, data)
    return analysis.issues + rules.place(path, analysis)


def _same(got: Any, want: Any) -> bool:
    """Equal values of the same JSON types, all the way down (True is not 1, 1 is not 1.0)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    return type(got) is type(want) and got == want


# --- single documents ----------------------------------------------------------------------

@pytest.mark.parametrize("case", _params(INVALID))
def test_invalid_case(case: Case) -> None:
    issues = _issues(case.path, case.data)
    got = sorted((i.line, i.col, i.code, i.rule) for i in issues)
    assert case.expect["issues"], "an invalid case must expect at least one issue"
    assert got == case.expected_issues(), "\n".join(i.as_text() for i in issues)
    lines = case.data.count(b"\n") + 1
    for issue in issues:
        assert issue.path == case.path
        assert 1 <= issue.line <= lines and issue.col >= 1, issue
        assert issue.message and "Traceback" not in issue.message
    said = {(i.line, i.col, i.rule): i.message for i in issues}
    for want in case.expect["issues"]:
        if "message" in want:
            assert want["message"] in said[(want["line"], want["col"], want["rule"])], said


@pytest.mark.parametrize("case", _params(VALID))
def test_valid_case(case: Case) -> None:
    analysis = analyze(case.path, case.data)
    issues = analysis.issues + rules.place(case.path, analysis)
    assert issues == [], "\n".join(i.as_text() for i in issues)
    assert analysis.facts is not None
    document = read_document(case.path, case.data)
    for key, want in case.expect.get("front", {}).items():
        assert key in document.front, key
        assert _same(document.front[key], want), f"{key}: got {document.front[key]!r}, want {want!r}"
    if "body" in case.expect:
        assert document.body == case.expect["body"]


def _damaged(data: bytes) -> list[bytes]:
    """The case itself, every prefix that ends at a line break, and a few cut mid-line or mid-character."""
    cuts = {i + 1 for i, b in enumerate(data) if b == 0x0A}
    cuts |= {len(data) // 3, len(data) // 2, len(data) - 1, 1, 5}
    return [data] + [data[:c] for c in sorted(cuts) if 0 <= c < len(data)]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.key) for c in INVALID + VALID if not c.generated])
def test_analysis_never_raises(case: Case) -> None:
    """No input can produce a traceback: the case, its truncations, and the case under other paths."""
    paths = (case.path, "comprehension/comp-x.md", "observations/x/obs-x.md", "notes/readme.md")
    for data in _damaged(case.data):
        for path in paths:
            for issue in _issues(path, data):
                assert issue.line >= 1 and issue.col >= 1, issue
                assert issue.rule in DOCUMENTED_RULES, issue


def test_case_files_are_paired() -> None:
    for kind in ("valid", "invalid"):
        folder = CASES / kind
        docs = {p.stem for p in folder.glob("*.md")}
        expects = {p.name[: -len(".expect.json")] for p in folder.glob("*.expect.json")}
        assert docs == expects, f"{kind}: unpaired {sorted(docs ^ expects)}"
        assert {p.name for p in folder.iterdir()} == {f"{n}.md" for n in docs} | {f"{n}.expect.json" for n in docs}
    for name in REPO_CASES:
        assert (CASES / "repo" / name / "expected.json").is_file(), name
    for key in KNOWN_BUGS:
        assert key in {c.key for c in INVALID + VALID}, f"KNOWN_BUGS names no case: {key}"


def test_corpus_size() -> None:
    assert len(INVALID) >= 45 and len(VALID) >= 12 and len(REPO_CASES) >= 10


# --- repositories, through the real command line -------------------------------------------

def _env(ceiling: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OBSREPO_NO_CACHE="1", GIT_CEILING_DIRECTORIES=str(ceiling))
    env.pop("OBSREPO_DEBUG", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # cached bytecode, as helpers.git_env gives every other process
    return env


def _copy_documents(source: Path, target: Path) -> None:
    target.mkdir(parents=True)
    for top in ("observations", "comprehension"):
        if (source / top).is_dir():
            shutil.copytree(source / top, target / top)


def _single_case(name: str) -> Case:
    return next(c for c in INVALID if c.name == name)


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess]:
    """`python -m obsrepo check --format json` in a copy of every repository case, and once more with
    PATHS in a folder holding each CLI_CASES document at its path; a few processes at a time."""
    root = tmp_path_factory.mktemp("cli")
    jobs: dict[str, tuple[Path, list[str]]] = {}
    for name in REPO_CASES:
        _copy_documents(CASES / "repo" / name, root / "repo" / name)
        jobs[f"repo/{name}"] = (root / "repo" / name, [])
    singles = root / "singles"
    for name in CLI_CASES:
        case = _single_case(name)
        (singles / case.path).parent.mkdir(parents=True, exist_ok=True)
        (singles / case.path).write_bytes(case.data)
    jobs["singles"] = (singles, [_single_case(name).path for name in CLI_CASES] + [MISSING_PATH])
    for cwd, _ in jobs.values():
        subprocess.run(["git", "init", "-q", str(cwd)], env=_env(root), check=True)

    def run(job: tuple[Path, list[str]]) -> subprocess.CompletedProcess:
        cwd, paths = job
        return subprocess.run([sys.executable, "-m", "obsrepo", "check", "--format", "json", *paths], cwd=cwd,
                              env=_env(root), capture_output=True, text=True, encoding="utf-8", timeout=120)

    with ThreadPoolExecutor(max_workers=(os.cpu_count() or 1) + 1) as pool:
        return dict(zip(jobs, pool.map(run, jobs.values())))


def _expected_repo_issues(name: str) -> list[tuple[str, str, str]]:
    expected = json.loads((CASES / "repo" / name / "expected.json").read_text("utf-8"))
    return sorted((i["path"], i["code"], i["rule"]) for i in expected["issues"])


@pytest.mark.parametrize("name", REPO_CASES)
def test_repo_case(name: str, cli_runs: dict[str, subprocess.CompletedProcess]) -> None:
    result = cli_runs[f"repo/{name}"]
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    got = sorted((i["path"], i["code"], i["rule"]) for i in report["issues"])
    want = _expected_repo_issues(name)
    assert got == want, json.dumps(report["issues"], indent=1, ensure_ascii=False)
    assert result.returncode == (1 if want else 0)
    assert report["ok"] is (not want)
    assert report["checked"] == len(list((CASES / "repo" / name).rglob("*.md")))


def _repository_analyses(name: str) -> dict[str, rules.Analysis]:
    base = CASES / "repo" / name
    return {p.relative_to(base).as_posix(): analyze(p.relative_to(base).as_posix(), p.read_bytes())
            for p in sorted(base.rglob("*.md"))}


@pytest.fixture(scope="module")
def singles_report(cli_runs: dict[str, subprocess.CompletedProcess]) -> dict[str, Any]:
    result = cli_runs["singles"]
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["checked"] == len(CLI_CASES)
    return report


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_reports_exactly_what_the_library_finds(name: str, singles_report: dict[str, Any]) -> None:
    """The same issues, messages and positions reach users through `obsrepo check --format json PATHS`."""
    case = _single_case(name)
    reported = [i for i in singles_report["issues"] if i["path"] == case.path]
    assert reported == [i.as_dict() for i in sorted(set(_issues(case.path, case.data)))]
    assert sorted((i["line"], i["col"], i["code"], i["rule"]) for i in reported) == case.expected_issues()


def test_cli_reports_a_missing_path(singles_report: dict[str, Any]) -> None:
    reported = [(i["path"], i["line"], i["col"], i["code"], i["rule"])
                for i in singles_report["issues"] if i["path"] == MISSING_PATH]
    assert reported == MISSING_PATH_ISSUES


def test_cli_reports_only_the_given_paths(singles_report: dict[str, Any]) -> None:
    given = {_single_case(name).path for name in CLI_CASES} | {MISSING_PATH}
    assert {i["path"] for i in singles_report["issues"]} == given


# --- rules are documented, and exercised -----------------------------------------------------

def _produced_rules() -> set[str]:
    produced = {i.rule for case in INVALID + VALID for i in _issues(case.path, case.data)}
    for name in REPO_CASES:
        analyses = _repository_analyses(name)
        produced |= {i.rule for path, a in analyses.items() for i in a.issues + rules.place(path, a)}
        produced |= {i.rule for i in graph.repository_rules(analyses)}
    return produced


def _expected_rules() -> set[str]:
    expected = {i["rule"] for case in INVALID for i in case.expect["issues"]}
    expected |= {rule for name in REPO_CASES for _path, _code, rule in _expected_repo_issues(name)}
    expected |= {issue[-1] for issue in MISSING_PATH_ISSUES}
    return expected


def test_every_rule_produced_is_documented() -> None:
    undocumented = (_produced_rules() | _expected_rules()) - DOCUMENTED_RULES
    assert not undocumented, f"add these rules to DOCUMENTED_RULES and docs/guide/errors.md: {sorted(undocumented)}"


def test_every_documented_rule_has_a_case() -> None:
    missing = DOCUMENTED_RULES - NOT_REACHABLE_HERE - _expected_rules()
    assert not missing, f"no case expects these rules: {sorted(missing)}"


def test_documented_rules_are_in_the_errors_guide() -> None:
    guide = ERRORS_GUIDE.read_text("utf-8")
    listed = set(re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+|[a-z]+)`", guide))
    assert not DOCUMENTED_RULES - listed, f"not in docs/guide/errors.md: {sorted(DOCUMENTED_RULES - listed)}"


def _rule_table_names(readme: str) -> set[str]:
    """The rule names in the errors guide's two rule tables (per-document rules, repository rules)."""
    names: set[str] = set()
    for table in re.findall(r"^\| (?:rule|code) \|.*?(?=^\s*$)", readme, flags=re.M | re.S):
        for row in table.splitlines()[2:]:
            cells = [c.strip() for c in row.strip("|").split("|")]
            rule_cell = cells[1] if table.startswith("| code") else cells[0]
            names |= set(re.findall(r"`([a-z0-9-]+)`", rule_cell))
    return names


def test_the_errors_guide_rule_tables_list_exactly_the_rule_list() -> None:
    assert _rule_table_names(ERRORS_GUIDE.read_text("utf-8")) == set(RULES)


def test_every_expected_issue_carries_its_rule_s_code() -> None:
    for case in INVALID:
        for issue in case.expect["issues"]:
            assert RULES[issue["rule"]][0] == issue["code"], (case.name, issue)


def test_an_invalid_entity_schema_is_reported_by_check(repo) -> None:
    repo.write("schemas/entities/invoice.yaml", "spec: entity-schema/v1\ntype: invoice\nfields:\n  total: {policy: loudest}\n")
    repo.commit("a schema with an unknown policy")
    result = repo.check()
    assert result.returncode == 1
    assert [(code, rule, path) for code, rule, path in result.issues] == [
        ("VALIDATION_ERROR", "entity-schema", "schemas/entities/invoice.yaml")]
