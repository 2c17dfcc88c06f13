"""The index planner decides an update from git alone: tests call it without DuckDB."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import observation

A = observation("obs-20260101-090000-0001", "2026-01-01T09:00:00Z", entity="company/a", fields={"n": 1})
B = observation("obs-20260102-090000-0002", "2026-01-02T09:00:00Z", entity="company/b", fields={"n": 2})
C = observation("obs-20260103-090000-0003", "2026-01-03T09:00:00Z", entity="company/c", fields={"n": 3})


def _plan(repo, stored, target):
    from obsrepo.gitstore import Git
    from obsrepo.index.plan import plan_update

    return plan_update(Git.discover(str(repo.path)), stored, repo.sha(target))


def test_a_first_build_adds_every_version_with_its_range(repo):
    repo.add(A)
    c1 = repo.commit("a")
    repo.add(B)
    c2 = repo.commit("b")
    (repo.path / A.path).unlink()
    c3 = repo.commit("a removed")
    plan = _plan(repo, None, c3)
    assert plan.full and plan.keep == -1 and not plan.truncate
    assert [c.sha for c in plan.commits] == [c1, c2, c3]
    assert [(a.path, a.added_seq, a.removed_seq, a.commit) for a in plan.additions] == [
        (A.path, 0, 2, c1), (B.path, 1, 2147483647, c2)]
    assert plan.removals == []


def test_an_update_appends_and_removes_stored_versions(repo):
    repo.add(A, B)
    c1 = repo.commit("a b")
    (repo.path / B.path).unlink()
    repo.add(C)
    repo.write("schemas/entities/company.yaml", "spec: entity-schema/v1\ntype: company\nfields:\n  n: {policy: last_write}\n")
    c2 = repo.commit("b removed, c added, a schema")
    plan = _plan(repo, [c1], c2)
    assert not plan.full and plan.keep == 0 and plan.since == c1 and not plan.truncate
    assert plan.removals == [(B.path, 1)]
    assert [(a.path, a.added_seq) for a in plan.additions] == [(C.path, 1)]
    assert plan.schemas_changed


def test_a_branch_that_moved_backwards_is_truncated(repo):
    repo.add(A)
    c1 = repo.commit("a")
    repo.add(B)
    c2 = repo.commit("b")
    plan = _plan(repo, [c1, c2], c1)
    assert plan.truncate and plan.keep == 0 and plan.commits == [] and plan.additions == []
    nothing = _plan(repo, [c1, c2], c2)
    assert nothing.empty and not nothing.truncate


def test_a_rewritten_branch_keeps_only_the_shared_prefix(repo):
    repo.add(A)
    c1 = repo.commit("a")
    repo.add(B)
    old = repo.commit("b")
    repo.git("reset", "-q", "--hard", c1)
    repo.add(C)
    new = repo.commit("c instead")
    plan = _plan(repo, [c1, old], new)
    assert plan.truncate and plan.keep == 0 and [c.sha for c in plan.commits] == [new]
    assert [a.path for a in plan.additions] == [C.path]


def test_versions_of_is_pure():
    from obsrepo.gitstore import Change
    from obsrepo.index.plan import versions_of

    z = "0" * 40
    changes = {"s2": [Change("D", "100644", "000000", "b1", z, "observations/x.md")],
               "s1": [Change("A", "000000", "100644", z, "b1", "observations/x.md"),
                      Change("M", "100644", "100644", "a0", "a1", "observations/y.md")]}
    removals, additions, schemas = versions_of(changes, {"s1": 5, "s2": 6}, {})
    assert removals == [("observations/y.md", 5)]
    assert [(a.path, a.blob, a.added_seq, a.removed_seq) for a in additions] == [
        ("observations/x.md", "b1", 5, 6), ("observations/y.md", "a1", 5, 2147483647)]
    assert not schemas


def test_planning_never_loads_duckdb(repo):
    repo.add(A)
    repo.commit("a")
    code = ("import sys; from obsrepo.gitstore import Git; from obsrepo.index.plan import plan_update; "
            f"g = Git.discover({str(repo.path)!r}); p = plan_update(g, None, g.resolve('HEAD')); "
            "assert len(p.additions) == 1; print(sorted(m for m in ('duckdb', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_check_plan_resolves_the_request_before_reading_any_document(repo):
    from obsrepo.errors import UsageError
    from obsrepo.gate.check import CheckRequest, apply_check, plan_check
    from obsrepo.gitstore import Git

    repo.add(A)
    base = repo.commit("a")
    repo.git("checkout", "-q", "-b", "topic")
    repo.add(B)
    repo.commit("b")
    (repo.path / "observations" / "broken.md").write_text("no front matter", encoding="utf-8")
    git = Git.discover(str(repo.path))
    plan = plan_check(git, CheckRequest(str(repo.path / "observations"), ("broken.md",), base="main"))
    assert plan.base_sha == base and not plan.staged and plan.immutability
    assert plan.wanted == {"observations/broken.md"}
    cache = repo.path / ".git" / "obsrepo" / "facts.marshal"  # what a pull request's check keeps
    assert not cache.exists()  # nothing read, nothing cached yet
    report = apply_check(git, plan)
    assert cache.exists()
    assert {(i.path, i.rule) for i in report.issues} == {("observations/broken.md", "front-matter-missing")}
    with pytest.raises(UsageError):
        plan_check(git, CheckRequest(str(repo.path), base="main", staged=True))
