"""The identity rule (docs/design.md §20) through the CLI: `check` reports a merge of entities
declared distinct and a declaration between merged entities (also through chains of merges) at
the offending document with its place, code and rule; `merge` and `distinct` refuse to write
them and change nothing. The same rule at every other judge: tests/test_one_judge.py; the
case files: tests/cases/repo/identity-*; through MCP: tests/test_identity_mcp.py."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from helpers import Repo, fingerprint, obs_id, observation

BRANCH = "obsrepo/proposals"


def _people(repo: Repo) -> None:
    repo.add(*[observation(obs_id(n), entity=f"person/{name}", fields={"name": name})
               for n, name in enumerate("abcde", start=1)])
    repo.commit("people")


@pytest.fixture
def people(make_repo: Callable[..., Repo]) -> Repo:
    repo = make_repo()
    _people(repo)
    return repo


def _tip(repo: Repo) -> str | None:
    return repo.run("git", "rev-parse", "-q", "--verify", f"refs/heads/{BRANCH}", check=False).stdout.strip() or None


def _write(repo: Repo, *argv: str) -> None:
    proc = repo.obsrepo(*argv, "--commit")
    assert proc.returncode == 0, proc.stderr
    repo.git("merge", "-q", "--ff-only", BRANCH)


def _refused(repo: Repo, *argv: str) -> dict:
    tip, before = _tip(repo), fingerprint(repo, BRANCH)
    proc = repo.obsrepo(*argv, "--commit", "--format", "json")
    assert proc.returncode == 1, proc
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "IDENTITY_CONFLICT", error
    assert _tip(repo) == tip and fingerprint(repo, BRANCH) == before
    return error


def test_merge_refuses_entities_declared_distinct_also_through_a_chain(people: Repo) -> None:
    _write(people, "distinct", "person/a", "person/c", "--reason", "Twins")
    _refused(people, "merge", "person/a", "person/c", "--reason", "Same")
    _refused(people, "merge", "person/c", "person/a", "--reason", "Same")
    _write(people, "merge", "person/a", "person/b", "--reason", "Same")  # a → b is fine
    error = _refused(people, "merge", "person/b", "person/c", "--reason", "Same")  # a → b → c is not
    issue, = error["details"]["issues"]
    assert issue["rule"] == "identity-conflict" and "person/a and person/c" in issue["message"], issue
    _refused(people, "merge", "person/c", "person/b", "--reason", "Same")  # c → b ← a neither
    _write(people, "merge", "person/d", "person/c", "--reason", "Same")
    assert people.check().returncode == 0


def test_distinct_refuses_entities_already_merged_also_through_a_chain(people: Repo) -> None:
    _write(people, "merge", "person/a", "person/b", "--reason", "Same")
    _write(people, "merge", "person/c", "person/b", "--reason", "Same")
    _refused(people, "distinct", "person/a", "person/b", "--reason", "Twins")
    _refused(people, "distinct", "person/c", "person/a", "--reason", "Twins")  # both merged into b
    _write(people, "distinct", "person/a", "person/d", "--reason", "Twins")
    assert people.check().returncode == 0


def test_check_reports_the_conflict_at_the_offending_document(people: Repo) -> None:
    distinct = observation(obs_id(20), entity="person/a", relations=[{"type": "DISTINCT_FROM", "target": "person/c"}])
    first = observation(obs_id(21), entity="person/a", relations=[{"type": "DUPLICATE_OF", "target": "person/b"}])
    second = observation(obs_id(22), entity="person/b", relations=[{"type": "DUPLICATE_OF", "target": "person/c"}])
    people.add(distinct, first, second)
    base = people.sha()
    people.commit("a chain over a declaration")
    result = people.check()
    assert result.returncode == 1
    issue, = result.data["issues"]
    relation_line = next(n for n, line in enumerate(str(second).splitlines(), 1) if "DUPLICATE_OF" in line)
    assert (issue["path"], issue["code"], issue["rule"], issue["line"]) == \
        (second.path, "IDENTITY_CONFLICT", "identity-conflict", relation_line), issue
    text = people.obsrepo("check")
    assert text.returncode == 1 and f"{second.path}:{issue['line']}:{issue['col']} IDENTITY_CONFLICT" in text.stdout
    assert "[identity-conflict]" in text.stdout
    # a pull request's check sees the same, judging the rest by its kept facts
    review = people.check("--base", base)
    assert [(i["path"], i["rule"]) for i in review.data["issues"]] == [(second.path, "identity-conflict")]
