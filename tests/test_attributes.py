"""Rule `git-attributes`: documents are compared as stored blobs, so no git attribute may make git
rewrite their bytes (filter, ident, text/eol/crlf conversion, working-tree-encoding).

Each test builds the attack in a real repository: an attribute plus a change it would hide.
"""

from __future__ import annotations

import pytest
from helpers import Repo, obs_id, observation

IV = "IMMUTABLE_VIOLATION"
VE = "VALIDATION_ERROR"
A = observation(obs_id(1), body="Tracked as $Id$ in the ledger.")
B = observation(obs_id(2))
C = observation(obs_id(3))


@pytest.fixture
def base(repo: Repo) -> Repo:
    """main holds A (whose body holds `$Id$`) and B, committed without attributes."""
    repo.add(A, B)
    repo.commit("base: A and B")
    return repo


def _attribute_issues(result) -> list[tuple[str, int, str]]:
    return sorted((i["path"], i["line"], i.get("details", {}).get("commit", ""))
                  for i in result.data["issues"] if i["rule"] == "git-attributes")


def test_ident_that_hides_a_modified_observation_in_a_fresh_clone_is_refused(base: Repo) -> None:
    """The pull request stores A with an `$Id: … $` of its own choosing and adds `*.md ident`: git
    collapses that back to `$Id$` when it reads the work tree, so content through git's filters
    equals the base while the blob (what the index and every clone serve) is modified."""
    base.git("checkout", "-q", "-b", "pr")
    base.write(".gitattributes", "*.md ident\n")
    forged = A.replace("$Id$", "$Id: amount=1000000 approved $")
    blob = base.git("hash-object", "-w", "--no-filters", "--stdin", input=forged)
    base.git("add", ".gitattributes")
    base.git("update-index", "--cacheinfo", f"100644,{blob},{A.path}")
    base.git("commit", "-q", "-m", "attributes, and A")
    forged_in = base.sha()
    clone = base.clone("clone", "--branch", "pr")
    clone.git("update-index", "-q", "--really-refresh")
    clone.run("touch", "-d", "2020-01-01", A.path)  # git now re-reads A through the ident filter
    assert clone.git("diff", "origin/main", "--", A.path) == ""  # what filters show: nothing changed
    result = clone.check("--base", "origin/main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "modified", A.path), (VE, "git-attributes", ".gitattributes")]
    assert _attribute_issues(result) == [(".gitattributes", 1, forged_in)]
    modified = next(i for i in result.data["issues"] if i["rule"] == "modified")
    assert modified["details"] == {"commit": forged_in}


def test_a_filter_that_hides_a_work_tree_edit_is_refused(base: Repo) -> None:
    base.git("config", "filter.x.clean", "sed s/LEDGER/ledger/")  # what git stores undoes the edit below
    base.git("config", "filter.x.smudge", "cat")
    base.git("checkout", "-q", "-b", "pr")
    base.write(".gitattributes", "# documents\nobservations/** filter=x\n")
    base.commit("a filter")
    base.write(A.path, A.replace("ledger", "LEDGER"))  # not committed: the clean filter undoes it
    assert base.git("diff", "HEAD", "--", A.path) == "" and base.git("status", "--porcelain") == ""
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert result.issues == [(IV, "modified", A.path), (VE, "git-attributes", ".gitattributes")]
    assert [(p, line) for p, line, _ in _attribute_issues(result)] == [(".gitattributes", 2)]
    issue = next(i for i in result.data["issues"] if i["rule"] == "git-attributes")
    assert "observations/** filter=x" in issue["message"] and issue["code"] == VE


@pytest.mark.parametrize("line", [
    "* text=auto",
    "*.md eol=crlf",
    "observations/**/*.md working-tree-encoding=UTF-16",
    "[attr]sneaky ident\n*.md sneaky",
])
def test_conversions_are_refused_without_a_base(repo: Repo, line: str) -> None:
    repo.add(A, B)
    repo.write(".gitattributes", "*.png binary\n" + line + "\n")
    result = repo.check()
    assert result.returncode == 1, result
    assert result.issues == [(VE, "git-attributes", ".gitattributes")]
    assert _attribute_issues(result) == [(".gitattributes", 1 + len(line.splitlines()), "")]


@pytest.mark.parametrize("line", ["*.md -text", "* binary", "*.md -ident -filter", "docs/** ident", "*.txt text"])
def test_attributes_that_leave_documents_alone_are_fine(repo: Repo, line: str) -> None:
    repo.add(A, B)
    repo.write(".gitattributes", line + "\n")
    repo.commit("attributes")
    assert repo.check().returncode == 0
    assert repo.check("--staged").returncode == 0


def test_attributes_in_a_nested_file_and_in_info_attributes(repo: Repo) -> None:
    repo.add(A, B)
    repo.write("observations/2026/.gitattributes", "*.md ident\n")
    result = repo.check()
    assert ("observations/2026/.gitattributes", 1, "") in _attribute_issues(result), result
    (repo.path / "observations/2026/.gitattributes").unlink()
    repo.write(".git/info/attributes", "# local\n*.md text\n")
    result = repo.check()
    assert result.returncode == 1, result
    assert _attribute_issues(result) == [(".git/info/attributes", 2, "")]


def test_an_attribute_added_and_removed_inside_the_range_is_refused(base: Repo) -> None:
    base.git("checkout", "-q", "-b", "pr")
    base.write(".gitattributes", "*.md ident\n")
    added = base.commit("add an attribute")
    base.write(".gitattributes", "*.png binary\n")
    base.commit("remove it again")
    base.add(C)
    base.commit("add C")
    assert base.check().returncode == 0  # the work tree is clean now
    result = base.check("--base", "main")
    assert result.returncode == 1, result
    assert _attribute_issues(result) == [(".gitattributes", 1, added)]


def test_staged_attributes_are_checked_as_the_index_holds_them(base: Repo) -> None:
    base.write(".gitattributes", "*.md ident\n")
    base.git("add", ".gitattributes")
    base.write(".gitattributes", "")  # the work tree no longer says so; the commit would
    result = base.check("--staged")
    assert result.returncode == 1, result
    assert _attribute_issues(result) == [(".gitattributes", 1, "")]
